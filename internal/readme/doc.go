// Package readme holds the test that keeps the README option tables true to
// the code. It has no code of its own.
//
// The rule it enforces: every exported function of a package that returns one
// of the package's option types (a type whose name ends in "Option") has a
// row in a Markdown table of the package's README.md — the repository's
// README.md for package cache — written as `Name(params)` with the parameter
// names of the declaration (a variadic one as `name...`, type parameters as
// `Name[V](s)`), and every `WithX(...)` in those tables is such a function of
// that package.
package readme

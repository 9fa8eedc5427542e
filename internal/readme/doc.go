// Package readme holds the tests that keep the repository's documentation
// true to the code. It has no code of its own.
//
// The rules it enforces:
//
//   - Options are documented in godoc: every exported option function (named
//     With..., or returning one of its package's option types) has a doc
//     comment that begins with its name.
//   - A package README.md with an options table lists every option function
//     that returns an option type, as `Name(params)` with the parameter names
//     of its declaration, and no `WithX(...)` the package does not declare.
//   - The repository's README.md runs nothing that is not there: each Go block
//     stands in a Go file of the repository (an Example that go test runs),
//     and each shell command names existing directories, files, main packages
//     and flags.
//   - Its figures are quoted from benchmarks/RESULTS.md, which run.sh writes:
//     every table row of its Results section stands there as it is.
package readme

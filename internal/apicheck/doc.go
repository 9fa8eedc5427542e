// Package apicheck reads the repository's Go source with go/parser (nothing is
// built or run) and checks two conventions of its public surface in tests:
//
//   - every error the code makes, and every exported error variable, says
//     where it comes from with one prefix, Prefix, followed by the package's
//     own context where that helps ("cacheguard: lock: not held");
//   - every exported function that returns an option (a type named Option or
//     ending in Option) has a doc comment, since options are documented in
//     godoc only.
//
// Each module calls ErrorPrefixes on its own directory from a test; the core
// module's test calls OptionsDocumented on the whole repository.
package apicheck

// Package apicheck reads a module's Go source with go/parser (nothing is
// built or run) and checks in its tests that every error the code makes, and
// every exported error variable, says where it comes from with one prefix,
// Prefix, followed by the package's own context where that helps
// ("cacheguard: lock: not held"). Each module calls ErrorPrefixes on its own
// directory from a test. (That every option is documented is checked by
// internal/readme.)
package apicheck

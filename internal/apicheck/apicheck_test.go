package apicheck

import "testing"

// The core module's error strings.
func TestErrorPrefixes(t *testing.T) { ErrorPrefixes(t, "../..") }

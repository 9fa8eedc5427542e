package apicheck

import "testing"

// The core module's error strings.
func TestErrorPrefixes(t *testing.T) { ErrorPrefixes(t, "../..") }

// Every option of every module of the repository.
func TestOptionsDocumented(t *testing.T) { OptionsDocumented(t, "../..") }

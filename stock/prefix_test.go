package stock

import (
	"testing"

	"github.com/cacheguard/cacheguard/internal/apicheck"
)

// Every error string of the module starts with the project's prefix.
func TestErrorPrefixes(t *testing.T) { apicheck.ErrorPrefixes(t, ".") }

package apicheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/cacheguard/cacheguard/internal/kind"
)

// anyRedis matches every package's ErrRedis (internal/kind).
var anyRedis = kind.Redis("apicheck")

// RedisFailure fails t unless err is what every package returns when Redis
// fails: an error that matches every package's ErrRedis, whose text starts
// with "cacheguard: <pkg>: " and names Prefix once (on each line: errors.Join
// lists one error a line). what names the call in the report. Each package's tests call it on the errors of its calls
// against a Redis that is gone (docs/vocabulary.md, "Errors").
func RedisFailure(t testing.TB, pkg, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error with Redis gone", what)
	case !errors.Is(err, anyRedis):
		t.Errorf("%s: %q does not match ErrRedis", what, err)
	default:
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, Prefix+pkg+": ") {
				t.Errorf("%s: %q does not start with %q", what, line, Prefix+pkg+": ")
			} else if strings.Count(line, Prefix) != 1 {
				t.Errorf("%s: %q repeats %q", what, line, Prefix)
			}
		}
	}
}

package apicheck

import (
	"errors"
	"strings"
	"testing"
)

// RedisFailure fails t unless err is what every package returns when Redis
// fails: an error that matches the package's ErrRedis (errRedis), whose
// text starts with "cacheguard: <package>: " and names Prefix once (on each
// line: errors.Join lists one error a line). what names the call in the
// report. Each package's tests call it on the errors of its calls against a
// Redis that is gone (docs/vocabulary.md, "Errors").
func RedisFailure(t testing.TB, errRedis error, what string, err error) {
	t.Helper()
	pkg, _, _ := strings.Cut(strings.TrimPrefix(errRedis.Error(), Prefix), ": ")
	switch {
	case err == nil:
		t.Errorf("%s: no error with Redis gone", what)
	case !errors.Is(err, errRedis):
		t.Errorf("%s: %q does not match %v", what, err, errRedis)
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

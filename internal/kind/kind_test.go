package kind

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each package's error of a kind matches itself only: not another
// package's of the same kind, nor its own of another kind.
func TestKindsMatchThemselvesOnly(t *testing.T) {
	makers := []func(string) error{Redis, InvalidArgument, InvalidOption, Closed}
	for i, mi := range makers {
		for j, mj := range makers {
			a := mi("lock")
			if errors.Is(a, mj("stock")) || errors.Is(a, mj("lock")) {
				t.Errorf("%v matches a fresh %v", a, mj("stock"))
			}
			if got := errors.Is(Wrap(a, "", errors.New("x")), a); !got && i == j {
				t.Errorf("a wrapped %v does not match it", a)
			}
		}
	}
	if got := Redis("lock").Error(); got != "cacheguard: lock: redis" {
		t.Errorf("text %q", got)
	}
}

// Wrap names the prefix once, keeps the cause matchable, and leaves an
// error of the kind as it is.
func TestWrapNamesThePrefixOnce(t *testing.T) {
	errLock, errStock := Redis("lock"), Redis("stock")
	cause := errors.New("dial tcp: connection refused")
	err := Wrap(errLock, "acquire \"a\"", cause)
	if got, want := err.Error(), `cacheguard: lock: redis: acquire "a": dial tcp: connection refused`; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, errLock) || !errors.Is(err, cause) {
		t.Errorf("%v does not match its kind and cause", err)
	}
	if Wrap(errLock, "x", err) != err {
		t.Errorf("an error of the sentinel was wrapped in it again")
	}
	if other := Wrap(errStock, "reserve", err); !errors.Is(other, errStock) || other.Error() != `cacheguard: stock: redis: reserve: lock: redis: acquire "a": dial tcp: connection refused` {
		t.Errorf("another package's Redis failure wrapped: %q", other)
	}
	foreign := fmt.Errorf("%w: abandoned", errors.New("cacheguard: call"))
	err = Wrap(errStock, "reserve", foreign)
	if got, want := err.Error(), "cacheguard: stock: redis: reserve: call: abandoned"; got != want || !errors.Is(err, errStock) || !errors.Is(err, foreign) {
		t.Errorf("Wrap(foreign) = %q, want %q", got, want)
	}
	notObtained := errors.New("cacheguard: lock: not obtained")
	err = Wrap(notObtained, "", Wrap(errLock, "", cause))
	if got, want := err.Error(), "cacheguard: lock: not obtained: redis: dial tcp: connection refused"; got != want || strings.Count(got, Prefix) != 1 {
		t.Errorf("Wrap(own package) = %q, want %q", got, want)
	}
	if Wrap(errStock, "x", nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}

// RedisErr leaves the caller's context error alone and wraps the rest,
// the expiry of a bound of the package's own included.
func TestRedisErrLeavesTheCallersContextAlone(t *testing.T) {
	errR := Redis("cache")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := RedisErr(ctx, errR, "get", context.Canceled); err != context.Canceled {
		t.Errorf("caller's cancel: %v", err)
	}
	own := fmt.Errorf("read: %w", context.DeadlineExceeded)
	if err := RedisErr(context.Background(), errR, "get", own); !errors.Is(err, errR) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("own bound: %v", err)
	}
}

// Errorf names the prefix once and wraps as fmt.Errorf does.
func TestErrorfNamesThePrefixOnce(t *testing.T) {
	inner := Wrap(Redis("lock"), "", errors.New("i/o timeout"))
	err := Errorf("cacheguard: lock: renew %q: %w", "a", inner)
	if got, want := err.Error(), `cacheguard: lock: renew "a": redis: i/o timeout`; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, inner) {
		t.Errorf("%v lost what it wraps", err)
	}
	other := Errorf("cacheguard: stock: settle: %w and %w", inner, context.Canceled)
	if got, want := other.Error(), "cacheguard: stock: settle: lock: redis: i/o timeout and context canceled"; got != want || !errors.Is(other, context.Canceled) {
		t.Errorf("text %q, want %q", got, want)
	}
	plain := Errorf("cacheguard: lock: x: %w", context.Canceled)
	if plain.Error() != "cacheguard: lock: x: context canceled" {
		t.Errorf("text %q", plain)
	}
}

// A joined error keeps one prefix on each of its lines.
func TestErrorfKeepsEachLinesPrefix(t *testing.T) {
	joined := errors.Join(context.Canceled, Wrap(Redis("cache"), "sync", errors.New("refused")))
	err := Errorf("cacheguard: cache: not ready: %w", joined)
	want := "cacheguard: cache: not ready: context canceled\ncacheguard: cache: redis: sync: refused"
	if err.Error() != want {
		t.Errorf("text %q, want %q", err, want)
	}
}

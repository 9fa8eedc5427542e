package redistest

import (
	"fmt"
	"testing"
)

// rerun is a test named like another: what -count makes of a test.
type rerun struct {
	testing.TB
	name string
}

func (r *rerun) Name() string { return r.name }

// runs returns two runs of one test named after t (and this run of t, so
// that -count runs this test afresh too), and that name made a Name.
func runsOf(t *testing.T) (first, second *rerun, base string) {
	name := fmt.Sprintf("%s/%p", t.Name(), t)
	return &rerun{t, name}, &rerun{t, name}, nameReplacer.Replace(name)
}

func TestNameIsNewForEachRun(t *testing.T) {
	first, second, base := runsOf(t)
	if got := Name(first); got != base {
		t.Fatalf("first run: Name = %q, want %q", got, base)
	}
	if got := Name(second); got != base+"~2" {
		t.Fatalf("second run: Name = %q, want %q", got, base+"~2")
	}
	if got, again := Prefix(first), Prefix(second); got != base+":" || again != base+"~2:" {
		t.Fatalf("a run's name changed: Prefix = %q, %q", got, again)
	}
	if got := RunEnv(second); got != runEnv+"=2" {
		t.Fatalf("RunEnv = %q", got)
	}
}

// A child process given the parent's RunEnv names its test as the parent's
// run does.
func TestNameInAChildIsTheParentsRun(t *testing.T) {
	t.Setenv(runEnv, "3")
	child, next, base := runsOf(t)
	if got := Name(child); got != base+"~3" {
		t.Fatalf("Name = %q, want %q", got, base+"~3")
	}
	if got := Name(next); got != base+"~4" {
		t.Fatalf("the child's own rerun: Name = %q, want %q", got, base+"~4")
	}
}

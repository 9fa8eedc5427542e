package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// ChildEnv is set in the environment of a test re-executed by Subprocesses; its
// value is the child's index.
const ChildEnv = "CACHEGUARD_TEST_CHILD"

// IsChild reports whether this test binary was started by Subprocesses, and
// which child it is.
func IsChild() (int, bool) {
	v := os.Getenv(ChildEnv)
	if v == "" {
		return 0, false
	}
	var i int
	fmt.Sscan(v, &i)
	return i, true
}

// Subprocesses re-executes the current test binary n times, running only the
// named test, with env added to each child's environment (and RunEnv, so
// that a child names its test as t's run does). It waits for all of them and
// returns each child's combined output; a child that fails fails t.
func Subprocesses(t testing.TB, ctx context.Context, n int, testName string, env ...string) []string {
	t.Helper()
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+testName+"$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), append(env, fmt.Sprintf("%s=%d", ChildEnv, i), RunEnv(t))...)
			out, err := cmd.CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				t.Errorf("child %d: %v\n%s", i, err, out)
			}
		}(i)
	}
	wg.Wait()
	return outs
}

package cache

import (
	"os/exec"
	"strings"
	"testing"
)

// The functions that take a cache's values are checked by the compiler: a
// cache of users given an order's tag function does not build (and the
// same program with matching types does, so the check is the types').
func TestValuesOfAnotherTypeDoNotCompile(t *testing.T) {
	build := func(dir string) (string, error) {
		out, err := exec.Command("go", "build", "-o", "/dev/null", "./testdata/values/"+dir).CombinedOutput()
		return string(out), err
	}
	if out, err := build("match"); err != nil {
		t.Fatalf("the matching program does not build: %v\n%s", err, out)
	}
	out, err := build("mismatch")
	if err == nil {
		t.Fatal("a cache of users given an order's tag function built")
	}
	if !strings.Contains(out, "cannot use") || !strings.Contains(out, "Values[order]") {
		t.Fatalf("the mismatch failed for another reason:\n%s", out)
	}
	t.Logf("as expected:\n%s", out)
}

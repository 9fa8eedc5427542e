package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// block is a fenced code block of a Markdown file.
type block struct {
	lang  string
	lines []string
	at    int // line number of the opening fence
}

func fencedBlocks(t *testing.T, path string) []block {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{lang: strings.TrimPrefix(line, "```"), at: i + 1}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s: code block at line %d is not closed", path, cur.at)
	}
	return out
}

// trimmed drops indentation and empty lines.
func trimmed(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// goSources returns the trimmed lines of every Go file of the repository.
func goSources(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = trimmed(strings.Split(string(b), "\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func containsRun(hay, needle []string) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		if slices.Equal(hay[i:i+len(needle)], needle) {
			return true
		}
	}
	return false
}

// Every Go block of the README is code that compiles and runs: its lines
// stand, in order, in a Go file of the repository (an Example, which go test
// runs, or a program).
func TestREADMEGoBlocksAreCompiledCode(t *testing.T) {
	srcs := goSources(t)
	n := 0
	for _, b := range fencedBlocks(t, filepath.Join(root, "README.md")) {
		if b.lang != "go" {
			continue
		}
		n++
		want := trimmed(b.lines)
		found := false
		for _, lines := range srcs {
			if containsRun(lines, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README.md: the Go block at line %d is in no Go file of the repository; quote an Example that go test runs", b.at)
		}
	}
	if n == 0 {
		t.Error("README.md has no Go block")
	}
}

var flagToken = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)`)

// programDirs maps a program the README runs by name to its source.
var programDirs = map[string]string{"cacheguard": "cmd/cacheguard"}

// Every command of the README's shell blocks names what exists: the
// directories and files it uses, the packages it runs (a main package) and,
// for a program of the repository, the flags it passes (declared in that
// program's source).
func TestREADMECommandsNameWhatExists(t *testing.T) {
	for _, b := range fencedBlocks(t, filepath.Join(root, "README.md")) {
		if b.lang != "sh" {
			continue
		}
		for i, line := range b.lines {
			if c := strings.Index(line, "#"); c >= 0 {
				line = line[:c]
			}
			where := func(f string, a ...any) {
				t.Errorf("README.md line %d: "+f, append([]any{b.at + 1 + i}, a...)...)
			}
			dir := "."
			for _, cmd := range strings.Split(line, "&&") {
				words := strings.Fields(cmd)
				if len(words) == 0 {
					continue
				}
				switch {
				case words[0] == "cd" && len(words) == 2:
					dir = filepath.Join(dir, words[1])
					if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
						where("no directory %s", dir)
					}
				case words[0] == "bash" && len(words) == 2, strings.HasPrefix(words[0], "./"):
					file := words[len(words)-1]
					if words[0] != "bash" {
						file = words[0]
					}
					if _, err := os.Stat(filepath.Join(root, dir, file)); err != nil {
						where("no file %s", filepath.Join(dir, file))
					}
				case words[0] == "go" && len(words) > 2 && words[1] == "run":
					checkProgram(t, where, filepath.Join(dir, words[2]), words[3:])
				case words[0] == "go" && len(words) > 2 && words[1] == "install":
					pkg, _, _ := strings.Cut(words[2], "@")
					rel, ok := strings.CutPrefix(pkg, "github.com/cacheguard/cacheguard/")
					if !ok {
						where("installs %s, not a package of this repository", pkg)
						continue
					}
					checkProgram(t, where, rel, nil)
				case words[0] == "go":
					// go test, go vet ...: the go command's own flags.
				case programDirs[words[0]] != "":
					checkProgram(t, where, programDirs[words[0]], words[1:])
				default:
					where("unknown command %q", words[0])
				}
			}
		}
	}
}

// checkProgram checks that dir holds a main package that declares every
// flag in args.
func checkProgram(t *testing.T, where func(string, ...any), dir string, args []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	if !strings.Contains(src.String(), "package main") {
		where("%s is not a main package", dir)
		return
	}
	for _, a := range args {
		m := flagToken.FindStringSubmatch(a)
		if m == nil {
			continue
		}
		if !strings.Contains(src.String(), `"`+m[1]+`"`) {
			where("%s declares no flag -%s", dir, m[1])
		}
	}
}

// The README quotes its figures from benchmarks/RESULTS.md, which run.sh
// writes: every table row of its Results section stands there as it is.
func TestREADMEResultsAreQuotedFromTheGeneratedFile(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	results, err := os.ReadFile(filepath.Join(root, "benchmarks", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Results\n")
	if !ok {
		t.Fatal("README.md has no Results section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	have := map[string]bool{}
	for _, l := range strings.Split(string(results), "\n") {
		have[l] = true
	}
	rows := 0
	for _, l := range strings.Split(section, "\n") {
		if !strings.HasPrefix(l, "|") && !(strings.HasPrefix(l, "- ") && l != "- none") {
			continue
		}
		rows++
		if !have[l] {
			t.Errorf("README.md quotes a row that benchmarks/RESULTS.md does not hold: %s", l)
		}
	}
	if rows == 0 {
		t.Error("README.md's Results section quotes no row of benchmarks/RESULTS.md")
	}
	// The counts by verdict are RESULTS.md's summary's, and every row of
	// it behind or missed is quoted.
	var counts []string
	var worse []string
	group := ""
	_, summary, _ := strings.Cut(string(results), "\n### Summary")
	summary, _, _ = strings.Cut(summary, "\n### ")
	for _, l := range strings.Split(summary, "\n") {
		if name, n, ok := strings.Cut(strings.TrimPrefix(l, "**"), "** ("); ok && strings.HasPrefix(l, "**") {
			group = name
			counts = append(counts, strings.TrimSuffix(n, "):")+" "+name)
			continue
		}
		if strings.HasPrefix(l, "- ") && (group == "behind" || group == "missed") {
			worse = append(worse, l)
		}
	}
	if want := "by verdict: " + strings.Join(counts, ", ") + "."; !strings.Contains(section, want) {
		t.Errorf("README.md's Results section does not say %q", want)
	}
	for _, l := range worse {
		if !strings.Contains(section, l+"\n") {
			t.Errorf("README.md's Results section leaves out a row behind or missed: %s", l)
		}
	}
}

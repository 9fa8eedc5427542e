package apicheck

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The core module's error strings.
func TestErrorPrefixes(t *testing.T) { ErrorPrefixes(t, "../..") }

// The options of every module of the repository, read together: a name or a
// signature can only clash across packages, and packages live in several
// modules. The walk takes every directory below the repository's root, so a
// module added to go.work (or not yet) is read without being listed here.
func TestVocabulary(t *testing.T) {
	pkgs := Vocabulary(t, "../..")
	// One package of the core and one of each nested module that has
	// options: the walk reaches into nested modules.
	for _, want := range []string{"cache", "lock", "bloom", "consistency/binlog", "ratelimit", "stock"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("no options found in %s (found %v): is the walk broken?", want, pkgs)
		}
	}
}

// docs/vocabulary.md shows each shared option as the check pins it, and each
// synonym the check refuses.
func TestVocabularyDocumented(t *testing.T) {
	text, err := os.ReadFile("../../docs/vocabulary.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(text)
	for name, sig := range Signatures {
		if !strings.Contains(doc, "`"+name+sig+"`") {
			t.Errorf("docs/vocabulary.md does not show `%s%s`", name, sig)
		}
	}
	for old := range Synonyms {
		if !strings.Contains(doc, "`"+old+"`") {
			t.Errorf("docs/vocabulary.md does not name the synonym `%s`", old)
		}
	}
}

// The shared errors of every module, read together (docs/vocabulary.md,
// "Errors").
func TestContract(t *testing.T) {
	pkgs := Contract(t, "../..")
	for _, want := range []string{"cache", "lock", "bloom", "hotkey", "consistency", "ratelimit", "stock"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("%s exports no ErrRedis (found in %v)", want, pkgs)
		}
	}
}

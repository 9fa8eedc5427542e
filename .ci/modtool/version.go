package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// family is the module path every module of this repository starts with.
const family = "github.com/cacheguard/cacheguard"

func inFamily(p string) bool { return p == family || strings.HasPrefix(p, family+"/") }

// checkVersion refuses what the go command would not take as a release tag.
func checkVersion(v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q is not a canonical semantic version (vMAJOR.MINOR.PATCH)", v)
	}
	if module.IsPseudoVersion(v) {
		return fmt.Errorf("version %q is a pseudo-version, not a release", v)
	}
	return nil
}

// versions makes every requirement of the modules in dirs on a sibling set
// (when set is not empty), then checks that they are all one version, each
// with a replace directive to a directory, and returns that version.
func versions(set string, dirs []string) (string, error) {
	if set != "" {
		if err := checkVersion(set); err != nil {
			return "", err
		}
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("version needs at least one module directory")
	}
	found := ""
	for _, dir := range dirs {
		name := filepath.Join(dir, "go.mod")
		data, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		f, err := modfile.Parse(name, data, nil)
		if err != nil {
			return "", err
		}
		replaced := map[string]bool{}
		for _, r := range f.Replace {
			if modfile.IsDirectoryPath(r.New.Path) {
				replaced[r.Old.Path] = true
			}
		}
		changed := false
		for _, r := range f.Require {
			p := r.Mod.Path
			if !inFamily(p) {
				continue
			}
			if !replaced[p] {
				return "", fmt.Errorf("%s: %s has no replace directive to its directory", name, p)
			}
			if set != "" && r.Mod.Version != set {
				if err := f.AddRequire(p, set); err != nil {
					return "", err
				}
				changed = true
			}
			v := r.Mod.Version
			if set != "" {
				v = set
			}
			if err := checkVersion(v); err != nil {
				return "", fmt.Errorf("%s: %s: %w", name, p, err)
			}
			if found != "" && v != found {
				return "", fmt.Errorf("%s: %s at %s, another sibling at %s: release them together", name, p, v, found)
			}
			found = v
		}
		if changed {
			f.Cleanup()
			out, err := f.Format()
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(name, out, 0o644); err != nil {
				return "", err
			}
		}
	}
	if found == "" {
		return "", fmt.Errorf("no module requires a sibling")
	}
	return found, nil
}

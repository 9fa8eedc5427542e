package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func proxy(repo, rev, version, out string, dirs []string) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	if out == "" || len(dirs) == 0 {
		return fmt.Errorf("proxy needs -version, -out and at least one module directory")
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	// The tree as the tag would hold it: the committed files of rev only.
	tree, err := os.MkdirTemp("", "modtool-tree")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repo, rev, tree)
	if msg, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("extracting %s: %v: %s", rev, err, msg)
	}
	for _, dir := range dirs {
		if err := add(tree, version, out, path.Clean(dir)); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// add writes the module in dir (relative to tree, the extracted
// revision) at version into the proxy directory out.
func add(tree, version, out, dir string) error {
	gomod := filepath.Join(tree, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return err
	}
	if f.Module == nil {
		return fmt.Errorf("%s names no module", gomod)
	}
	mv := module.Version{Path: f.Module.Mod.Path, Version: version}
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(zf, mv, filepath.Join(tree, filepath.FromSlash(dir))); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".info"), info, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, version+".mod"), data, 0o644); err != nil {
		return err
	}
	return appendLine(filepath.Join(vdir, "list"), version)
}

// appendLine adds line to the file at name unless it is there already.
func appendLine(name, line string) error {
	old, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, l := range strings.Split(string(old), "\n") {
		if l == line {
			return nil
		}
	}
	return os.WriteFile(name, append(old, line+"\n"...), 0o644)
}

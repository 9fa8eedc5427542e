// Command modtool does the two module chores of a release of this
// repository, whose modules (the root and the nested ones of
// .ci/modules.sh) are versioned and tagged together:
//
//	modtool version [-set V] dir...
//
// checks that every module in dirs requires its siblings at one version and
// keeps a replace directive for each (so work inside the repository uses
// the siblings' source), and prints that version; with -set it first makes
// every such requirement V (.ci/release does that).
//
//	modtool proxy -version V -out DIR [-repo R] [-rev REV] dir...
//
// writes a Go module proxy directory (the layout GOPROXY reads:
// <module>/@v/list, .info, .mod, .zip) holding the modules in dirs at
// version V, made from git revision REV exactly as the release tags it:
// each zip is what the go command downloads for the tag <dir>/V (V for the
// root), nested modules left out of their parent's zip. .ci/consumer builds
// a program outside the repository against it, with GOWORK=off and no
// replace directive.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "version":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		set := fs.String("set", "", "make every sibling requirement this version first")
		fs.Parse(args)
		var v string
		if v, err = versions(*set, fs.Args()); err == nil {
			fmt.Println(v)
		}
	case "proxy":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		repo := fs.String("repo", ".", "root of the git repository")
		rev := fs.String("rev", "HEAD", "git revision the release tags")
		version := fs.String("version", "", "version of every module, e.g. v0.1.0")
		out := fs.String("out", "", "proxy directory to write")
		fs.Parse(args)
		err = proxy(*repo, *rev, *version, *out, fs.Args())
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modtool:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: modtool version [-set V] dir... | modtool proxy -version V -out DIR [-repo R] [-rev REV] dir...")
	os.Exit(2)
}

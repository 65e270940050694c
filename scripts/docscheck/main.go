// Command docscheck fails if a Markdown guide quotes an exported Go name the module
// no longer declares, or a path the repository no longer holds: every
// `pkg.Name`, `Type.Method` or `pkg.Type.Member` and every
// `dir/file.go`, `dir/file.go:12` or `dir/sub/` in backticks, outside
// fenced code blocks, in README.md and docs/*.md (docs/history/ is a
// record of its time and is not checked). It reads the tree's
// declarations with go/parser, offline, and prints file:line, the quote
// and what is missing. Names whose first element is not a package or a
// type of the module (flags, JSON fields, other modules' APIs) and paths
// whose first element is not at the module's root or is an output folder
// .gitignore anchors (`/bin/`) are not checked.
//
//	go run ./scripts/docscheck [-root DIR] [FILE.md ...]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the module's folder")
	flag.Parse()
	files := flag.Args()
	if len(files) == 0 {
		docs, _ := filepath.Glob(filepath.Join(*root, "docs", "*.md"))
		files = append([]string{"README.md"}, docs...)
		for i := 1; i < len(files); i++ {
			files[i], _ = filepath.Rel(*root, files[i])
		}
	}
	found, err := Check(*root, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Println(f)
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "docscheck: %d quoted names or paths the module does not hold\n", len(found))
		os.Exit(1)
	}
}

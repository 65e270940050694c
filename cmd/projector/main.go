// Command projector applies the tablejournal journal to tables; see
// internal/cli and `projector --help`.
package main

import (
	"os"

	"github.com/tablejournal/tablejournal/internal/cli"
	"github.com/tablejournal/tablejournal/internal/projectorcmd"
)

func main() { os.Exit(cli.Main(projectorcmd.Projector, os.Args[1:], cli.StdIO())) }

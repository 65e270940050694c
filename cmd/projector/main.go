// Command projector applies the tablejournal journal to tables; see
// cmd/projector/projectorcmd and `projector --help`.
package main

import (
	"os"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
)

func main() { os.Exit(cli.Main(projectorcmd.Run, os.Args[1:], cli.StdIO())) }

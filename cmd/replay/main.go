// Command replay is time travel over tablejournal's tables: as-of reads,
// row history, blame, rebuild, undo, restore, snapshot and load; see
// cmd/replay/replaycmd and `replay --help`.
package main

import (
	"os"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
)

func main() { os.Exit(cli.Main(replaycmd.Run, os.Args[1:], cli.StdIO())) }

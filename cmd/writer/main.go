// Command writer publishes commands into the tablejournal journal; see
// cmd/writer/writercmd and `writer --help`.
package main

import (
	"os"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/writer/writercmd"
)

func main() { os.Exit(cli.Main(writercmd.Run, os.Args[1:], cli.StdIO())) }

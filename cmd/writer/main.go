// Command writer publishes commands into the tablejournal journal; see
// internal/cli and `writer --help`.
package main

import (
	"os"

	"github.com/tablejournal/tablejournal/internal/cli"
)

func main() { os.Exit(cli.Main(cli.Writer, os.Args[1:], cli.StdIO())) }

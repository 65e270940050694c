// Command writer publishes commands into the tablejournal journal; see
// internal/cli and `writer --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablejournal/tablejournal/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Exit(cli.Writer(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

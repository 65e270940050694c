// Command projector applies the tablejournal journal to tables; see
// internal/cli and `projector --help`.
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
	os.Exit(cli.Exit(cli.Projector(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

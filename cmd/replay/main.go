// Command replay is time travel over tablejournal's tables: as-of reads,
// row history, blame, rebuild, undo, restore, snapshot and load; see
// internal/cli and `replay --help`.
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
	os.Exit(cli.Exit(cli.Replay(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

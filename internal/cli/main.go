package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Command is the signature of every command: Projector, Writer, Replay.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Main runs cmd with a context cancelled on SIGINT or SIGTERM and returns
// the process exit code. A main calls os.Exit(cli.Main(...)): the exit
// happens after Main's deferred calls (the signal relay's stop) have run,
// not instead of them.
func Main(cmd Command, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Exit(cmd(ctx, args, stdout, stderr), stderr)
}

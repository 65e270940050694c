package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/replay"
)

// Exit codes of every command.
const (
	ExitOK       = 0
	ExitFailure  = 1 // an error: the server, the store, the network
	ExitUsage    = 2 // a command-line mistake
	ExitRejected = 3 // the command was refused (invalid, or rejected by the projector)
	ExitUnowned  = 4 // projector status: a shard has pending commands and no owner
)

// ErrRejected marks a command refused by validation or by the projector.
var ErrRejected = errors.New("rejected")

// ErrUnowned marks shards with pending commands and no projector applying
// them.
var ErrUnowned = errors.New("unowned shards")

// Exit prints err (if any) and returns the process exit code for it.
func Exit(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(stderr, "error:", err, "(see --help)")
		return ExitUsage
	case errors.Is(err, ErrUnowned):
		fmt.Fprintln(stderr, "error:", err)
		return ExitUnowned
	case errors.Is(err, ErrDrift):
		fmt.Fprintln(stderr, "drift:", err)
		return ExitRejected
	case errors.Is(err, replay.ErrPruned):
		fmt.Fprintln(stderr, "pruned:", err)
		return ExitRejected
	case errors.Is(err, ErrRejected):
		fmt.Fprintln(stderr, "rejected:", err)
		return ExitRejected
	default:
		fmt.Fprintln(stderr, "error:", err)
		return ExitFailure
	}
}

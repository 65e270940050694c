package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
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

// ErrDrift marks a table that differs from its journal or from the table
// it was compared with: exit status 3.
var ErrDrift = errors.New("tables differ")

// ErrUnowned marks shards with pending commands and no projector applying
// them.
var ErrUnowned = errors.New("unowned shards")

// Exit prints err (if any) and returns the process exit code for it.
func Exit(err error, stderr io.Writer) int {
	var r *refusal
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
	case errors.As(err, &r):
		fmt.Fprintln(stderr, r.word+":", err)
		return ExitRejected
	case errors.Is(err, ErrRejected):
		fmt.Fprintln(stderr, "rejected:", err)
		return ExitRejected
	default:
		fmt.Fprintln(stderr, "error:", err)
		return ExitFailure
	}
}

// Refused marks err as an answer the command refuses to give, for a reason
// the user must read first: Exit prints "word: err" and exits with status 3
// (replay's "erased: ..." and "pruned: ...").
func Refused(word string, err error) error { return &refusal{word, err} }

type refusal struct {
	word string
	err  error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// ErrUsage marks a command-line mistake; mains exit with status 2 on it.
var ErrUsage = errors.New("usage")

// UsageError marks err as a command-line mistake, unless it is
// flag.ErrHelp.
func UsageError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// WaitTimeout is how long a command waits for a server to answer when the
// caller set no deadline.
const WaitTimeout = 30 * time.Second

package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Command is the signature of every command: Projector, Writer, Replay.
// args are the command-line arguments without the program name.
type Command func(ctx context.Context, args []string, stdio IO) error

// IO is what a command reads and writes besides its arguments: the
// standard streams, the terminal check and the clock. Tests fill it with
// buffers, a terminal check of their own and a fixed clock; StdIO is the
// process's.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// IsTerminal reports whether w is a terminal: progress bars are drawn
	// only on one. If nil, w is a terminal when it is an *os.File on one.
	IsTerminal func(w io.Writer) bool
	// Now is the clock, read for a command's issuedAt and the time of
	// status lines. If nil, time.Now.
	Now func() time.Time
}

// StdIO is the process's standard streams, terminal check and clock.
func StdIO() IO { return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr} }

// Terminal reports whether w is a terminal.
func (o IO) Terminal(w io.Writer) bool {
	if o.IsTerminal != nil {
		return o.IsTerminal(w)
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Time reads the clock.
func (o IO) Time() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Input is the standard input, or an empty one.
func (o IO) Input() io.Reader {
	if o.Stdin == nil {
		return eofReader{}
	}
	return o.Stdin
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Main runs cmd with a context cancelled on SIGINT or SIGTERM and returns
// the process exit code. The first signal asks cmd to stop; a second one
// kills the process at once (the signals' default), for an operator who
// will not wait. A main calls os.Exit(cli.Main(...)): the exit happens
// after Main's deferred calls (the signal relay's stop) have run, not
// instead of them.
func Main(cmd Command, args []string, stdio IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return Exit(cmd(ctx, args, stdio), stdio.Stderr)
}

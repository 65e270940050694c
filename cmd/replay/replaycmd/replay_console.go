package replaycmd

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/consoleserve"
	"github.com/tablejournal/tablejournal/console"
)

// consoleCmd is replay console: the web console over the journal and the
// tables, served until the command is stopped.
type consoleCmd struct {
	replayBase
	cf consoleserve.Flags
}

func (c *consoleCmd) flags(fs *flag.FlagSet) {
	c.cf.Register(fs, "", "127.0.0.1:8089", "listen on this address; loopback unless told otherwise, port 0 picks a free one")
	c.durableFlag(fs, "the projector's consumer name prefix, for the health page (default projector)")
}

func (c *consoleCmd) check() error   { return nil }
func (c *consoleCmd) nats() natsNeed { return natsYes }

func (c *consoleCmd) run(ctx context.Context, stdio cli.IO) error {
	log := slog.New(slog.NewTextHandler(stdio.Stderr, nil))
	cfg, err := c.cf.Config(c.rp, log)
	if err != nil {
		return err
	}
	h, err := console.New(cfg)
	if err != nil {
		return err
	}
	s, err := consoleserve.Start(ctx, &c.cf, h, cfg.Auth != nil, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Stdout, "console: %s\n", s.URL)
	return s.Wait()
}

package projectorcmd

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/consoleserve"
	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store"
)

// startConsole serves the web console (--console-addr) over this
// projector's journal and store, on its own listener.
func startConsole(ctx context.Context, f *consoleserve.Flags, js jetstream.JetStream, st store.Store, stream string, log *slog.Logger) (*consoleserve.Server, error) {
	rp, err := replay.New(ctx, replay.Config{Store: st, JetStream: js, Journal: stream, Logger: log})
	if err != nil {
		return nil, err
	}
	cfg, err := f.Config(rp, log)
	if err != nil {
		return nil, err
	}
	h, err := console.New(cfg)
	if err != nil {
		return nil, err
	}
	return consoleserve.Start(ctx, f, h, cfg.Auth != nil, log)
}

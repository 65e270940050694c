// Package projectorcmd is the projector command with its embedded
// JetStream server: internal/cli's NewProjector given journal/embedded.
// Apart from internal/cli so that only the projector links nats-server, not
// the writer and replay commands that share that package.
package projectorcmd

import (
	"log/slog"

	"github.com/tablejournal/tablejournal/internal/cli"
	"github.com/tablejournal/tablejournal/journal/embedded"
)

// Projector is the projector command, as cmd/projector runs it.
var Projector = cli.NewProjector(startEmbedded)

func startEmbedded(dir, listen string, noSync bool, log *slog.Logger) (cli.EmbeddedServer, error) {
	s, err := embedded.Start(embedded.Config{Dir: dir, Listen: listen, NoSync: noSync, Logger: log})
	if err != nil {
		return nil, err // not a nil *embedded.Server in the interface
	}
	return s, nil
}

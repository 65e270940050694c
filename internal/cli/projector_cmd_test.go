package cli

import (
	"log/slog"

	"github.com/tablejournal/tablejournal/journal/embedded"
)

// Projector is the projector command as internal/projectorcmd builds it
// (which this package's tests cannot import: it imports this package).
var Projector = NewProjector(func(dir, listen string, noSync bool, log *slog.Logger) (EmbeddedServer, error) {
	s, err := embedded.Start(embedded.Config{Dir: dir, Listen: listen, NoSync: noSync, Logger: log})
	if err != nil {
		return nil, err
	}
	return s, nil
})

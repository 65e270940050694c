package projection

import "log/slog"

// logStreamChanges says what starting the projector changed in an existing
// stream's configuration: never silently.
func logStreamChanges(log *slog.Logger, stream string, changes []string) {
	for _, c := range changes {
		log.Warn("stream configuration updated", "stream", stream, "change", c)
	}
}

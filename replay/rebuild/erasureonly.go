package rebuild

import (
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/wire"
)

// erasureOnly reports whether a journal's missing messages can only be
// erasures (SPEC §10): created to allow single deletes for erasure, it
// denies purges, so no prefix of it was trimmed.
func erasureOnly(cfg jetstream.StreamConfig) bool {
	return cfg.DenyPurge && !cfg.DenyDelete && cfg.Metadata[wire.MetadataAllowMsgDelete] == "true"
}

package projectorcmd

import (
	"fmt"
	"path/filepath"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/metrics"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store/stores"
)

// EnvMetricsAddr is the environment variable of --metrics-addr.
const EnvMetricsAddr = "TABLEJOURNAL_METRICS_ADDR"

// startupAttrs is the startup line: what runs where, without secrets;
// st is the store as opened, whose Mode, for Azure, says how it
// authenticates.
func startupAttrs(instance, natsFlag, url, data string, fsync bool, tables string, st any, cfg projection.Config, o *metrics.Ops) []any {
	attrs := []any{"instance", instance}
	if natsFlag == "" {
		attrs = append(attrs, "nats", "embedded", "url", url, "jetstream_dir", filepath.Join(data, "jetstream"), "fsync", fsync)
	} else {
		attrs = append(attrs, "nats", "external", "url", cli.RedactURL(url))
	}
	attrs = append(attrs, "tables", stores.Describe(tables))
	if m, ok := st.(interface{ Mode() azauth.Mode }); ok {
		attrs = append(attrs, "auth", string(m.Mode()))
	}
	if cfg.Shards != nil {
		attrs = append(attrs, "shards", fmt.Sprint(cfg.Shards))
	} else {
		attrs = append(attrs, "shards", "shared with the other instances",
			"owners_bucket", projection.OwnersBucketFor(cfg.Journal.Stream, cfg.Durable))
	}
	sweep := "off"
	if cfg.SweepInterval > 0 {
		sweep = cfg.SweepInterval.String()
	}
	return append(attrs, "change_feed", !cfg.NoChangeFeed, "sweep_interval", sweep, "metrics", o.URL())
}

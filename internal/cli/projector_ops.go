package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tablejournal/tablejournal/internal/metrics"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store/stores"
)

// EnvMetricsAddr is the environment variable of --metrics-addr.
const EnvMetricsAddr = "TABLEJOURNAL_METRICS_ADDR"

// instanceID names this projector process in status reports: host and
// process ID.
func instanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "projector"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// startupAttrs is the startup line: what runs where, without secrets.
func startupAttrs(instance, natsFlag, url, data string, fsync bool, tables string, cfg projection.Config, o *metrics.Ops) []any {
	attrs := []any{"instance", instance}
	if natsFlag == "" {
		attrs = append(attrs, "nats", "embedded at "+url, "jetstream_dir", filepath.Join(data, "jetstream"), "fsync", fsync)
	} else {
		attrs = append(attrs, "nats", redactURL(url))
	}
	shards := "all"
	if cfg.Shards != nil {
		shards = fmt.Sprint(cfg.Shards)
	}
	return append(attrs, "tables", stores.Describe(tables), "shards", shards,
		"change_feed", !cfg.NoChangeFeed, "metrics", o.URL())
}

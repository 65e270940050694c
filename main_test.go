package tablejournal_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

// The pipeline the tests and examples of this package run against: an
// in-process JetStream server, the embedded table store and a projector.
var (
	natsURL string
	tables  string
	// tableStore is the pipeline's table store, for tj.WithStore.
	tableStore store.Store
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tablejournal-client-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := tablejournaltest.Start(ctx, tablejournaltest.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	natsURL, tables = p.URL(), p.Tables()
	tableStore = p.Store()
	code := m.Run()
	if err := p.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "projector:", err)
		return 1
	}
	return code
}

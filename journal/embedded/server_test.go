package embedded_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

func TestServerRefusesNonLoopbackAndBusyPort(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:4222", "10.1.2.3:0", ":0", "example.com:4222"} {
		if _, err := embedded.Start(embedded.Config{Dir: t.TempDir(), Listen: listen}); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Start(%s) = %v, want a loopback-only error", listen, err)
		}
	}
	if _, err := embedded.Start(embedded.Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("Start without a store dir succeeded")
	}

	s := journaltest.StartServer(t)
	start := time.Now()
	_, err := embedded.Start(embedded.Config{Dir: t.TempDir(), Listen: s.Config().Listen, Logger: journaltest.Logger()})
	if err == nil {
		t.Fatal("a second server started on a busy port")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("busy port reported after %s", d)
	}
}

// A second server on the store folder of a running one is refused, naming
// the holder; after Shutdown the folder is free.
func TestStoreLocked(t *testing.T) {
	s := journaltest.StartServer(t)
	cfg := s.Config()
	cfg.Listen = "127.0.0.1:0"
	_, err := embedded.Start(cfg)
	if !errors.Is(err, embedded.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("a second server on %s: %v, want ErrLocked naming this process", cfg.Dir, err)
	}
	s.Shutdown()
	again, err := embedded.Start(cfg)
	if err != nil {
		t.Fatalf("after Shutdown: %v", err)
	}
	again.Shutdown()
}

// TestDefaultSyncsEveryWrite: the embedded server's default acknowledges a
// command only once it is on disk, so an acknowledged command survives
// the machine losing power (SPEC §5, contract v2; Jepsen's NATS 2.12.1
// analysis lost acknowledged writes with the default two-minute
// sync_interval). NoSync is the only way to turn it off.
func TestDefaultSyncsEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		noSync bool
		want   bool
	}{{false, true}, {true, false}} {
		s, err := embedded.Start(embedded.Config{Dir: t.TempDir(), Listen: "127.0.0.1:-1", NoSync: tc.noSync, Logger: journaltest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		got := s.SyncsEveryWrite()
		s.Shutdown()
		if got != tc.want {
			t.Errorf("NoSync %v: the server syncs every write: %v, want %v", tc.noSync, got, tc.want)
		}
	}
}

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

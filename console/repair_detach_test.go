package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/wire"
)

// TestRepairEraseOutlivesTheRequest: an erase confirmed on the console
// runs to its end although the browser gave up on the page (its request
// is cancelled as soon as the erase is journaled, while the console waits
// for the projector and securely deletes the partition's messages, which
// takes minutes for a large partition): nothing of the partition is left,
// and the console's log says what the erase did. Under the request's
// context the erase stopped halfway, its commands left in the journal.
func TestRepairEraseOutlivesTheRequest(t *testing.T) {
	logs := &messages{}
	f := seedErasableIn(t, wire.LayoutVersioned, console.Config{AllowChanges: true, Logger: slog.New(logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 150
	for i := range n {
		cmd := tj.NewCommand(f.table, "big").WithID(fmt.Sprint("big-", i))
		cmd.Upsert(fmt.Sprintf("r%d", i%10), tj.Entity{"v": tj.String(fmt.Sprint("SECRET-BIG-", i))})
		var err error
		if i < n-1 {
			_, err = f.client.Publish(ctx, cmd)
		} else {
			_, err = f.client.Apply(ctx, cmd) // in order: all applied
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	form := confirmForm(t, f, url.Values{"kind": {"erase"}, "table": {f.table}, "pk": {"big"}})
	journal, err := f.js.Stream(ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	lastSeq := func() uint64 {
		info, err := journal.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	before := lastSeq()

	reqCtx, leave := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, f.srv.URL+"/repair", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	type response struct {
		code int
		err  error
	}
	done := make(chan response, 1)
	go func() {
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			done <- response{err: err}
			return
		}
		resp.Body.Close()
		done <- response{code: resp.StatusCode}
	}()
	journaltest.WaitFor(t, time.Minute, "the erase journaled", func() bool {
		select {
		case r := <-done:
			t.Fatalf("the request ended before the erase was journaled: %d, %v", r.code, r.err)
		default:
		}
		return lastSeq() > before
	})
	leave() // the browser gives up
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the request ended with %d, %v before the browser left: the erase was too quick to tell", r.code, r.err)
	}

	journaltest.WaitFor(t, time.Minute, "the console's log of the erase", func() bool {
		return logs.has("console repair applied after its request ended")
	})
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	defer pcancel()
	p, err := erasure.New(f.rp).PlanErase(pctx, erasure.Target{Table: f.table, PK: "big"})
	if err != nil || p.EraseSeq == 0 || !p.Empty() {
		t.Fatalf("after the erase: %+v, %v", p, err)
	}
	// Its command's page says what it took from the table.
	if code, body := get(t, f, "/command?id="+url.QueryEscape(p.EraseID)); code != 200 || !strings.Contains(body, `id="erased"`) {
		t.Errorf("the erase's page: %d, no count of the rows it erased\n%s", code, body)
	}
}

// messages is a slog.Handler that keeps the messages logged.
type messages struct {
	mu   sync.Mutex
	msgs []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) WithAttrs([]slog.Attr) slog.Handler       { return m }
func (m *messages) WithGroup(string) slog.Handler            { return m }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, r.Message)
	return nil
}

func (m *messages) has(msg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.msgs, msg)
}

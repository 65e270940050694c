package writercmd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestWriterApplyInterrupted: apply stopped (SIGINT: its context ends)
// while the commands it sent await their acknowledgements counts each
// command once and right: published when the acknowledgement comes after
// all, unconfirmed when none comes within --timeout, and the rest of the
// file not sent. Before, every command in flight was "not published"
// although the journal held it (issue 28: "15 published ... 3993 not
// published" while the journal grew by 4,008).
func TestWriterApplyInterrupted(t *testing.T) {
	t.Parallel()
	const inFlight, total = 50, 120
	var lines []string
	for i := range total {
		lines = append(lines, fmt.Sprintf(`{"id":"int-%d","table":"orders","pk":"p%d","ops":[{"op":"upsert","rk":"r","entity":{"n":%d}}]}`, i+1, i%7, i))
	}
	path := clitest.CommandsFile(t, strings.Join(lines, "\n")+"\n")
	tests := []struct {
		name      string
		ackLater  bool // the acknowledgements come once apply stopped
		published int
		summary   []string
	}{
		{"acknowledged after the stop", true, inFlight, []string{
			fmt.Sprintf("apply: %d commands read, %d published (0 already in the journal), 0 invalid\n", inFlight, inFlight),
			fmt.Sprintf("interrupted at line %d: %d commands from it on not sent\n", inFlight+1, total-inFlight),
			"apply the same input again",
			fmt.Sprintf("error: interrupted at line %d\n", inFlight+1),
		}},
		{"never acknowledged", false, 0, []string{
			fmt.Sprintf("apply: %d commands read, 0 published (0 already in the journal), 0 invalid, %d unconfirmed (sent, not acknowledged: they may be in the journal)\n", inFlight, inFlight),
			fmt.Sprintf("interrupted at line %d: %d commands from it on not sent\n", inFlight+1, total-inFlight),
			"unconfirmed:\n  line 1 (id int-1): no acknowledgement within --timeout 1s\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startWriterEnv(t, false)
			proxy := startAckHolder(t, e.url)
			ctx, cancel := context.WithCancel(journaltest.Context(t, time.Minute))
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := make(chan int, 1)
			go func() {
				err := Run(ctx, []string{"apply", path, "--json", "--timeout", "1s", "--max-in-flight", fmt.Sprint(inFlight), "--nats", proxy.url()},
					cli.IO{Stdout: &stdout, Stderr: &stderr})
				code <- cli.Exit(err, &stderr)
			}()
			// The journal stores the first --max-in-flight commands; their
			// acknowledgements are held, so apply waits with all of them in
			// flight. Then it is interrupted.
			wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
			defer wcancel()
			projectiontest.WaitFor(t, wctx, "the commands in flight stored", func() (bool, error) {
				n, err := journalMsgs(wctx, e)
				return n == inFlight, err
			})
			cancel()
			if tt.ackLater {
				proxy.release()
			}
			if got := <-code; got != cli.ExitFailure {
				t.Errorf("exit %d, want %d", got, cli.ExitFailure)
			}
			stored, err := journalMsgs(journaltest.Context(t, 10*time.Second), e)
			if err != nil || stored != inFlight {
				t.Fatalf("journal holds %d commands (%v), want %d", stored, err, inFlight)
			}
			for _, w := range tt.summary {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("stderr says the raw \"context canceled\":\n%s", stderr.String())
			}
			if strings.Contains(stderr.String(), "not published") {
				t.Errorf("stderr counts a sent command as not published:\n%s", stderr.String())
			}
			out := applyOutput(t, stdout.String())
			published := 0
			for n := 1; n <= total; n++ {
				l, ok := out[n]
				switch {
				case n > inFlight && ok:
					t.Errorf("line %d, never sent, printed: %+v", n, l)
				case n > inFlight:
				case !ok:
					t.Errorf("line %d, sent, not printed", n)
				case l.Seq > 0 && l.Error == "" && !l.Unconfirmed:
					published++
				case l.Seq == 0 && l.Unconfirmed && l.Error != "":
				default:
					t.Errorf("line %d: %+v, neither published nor unconfirmed", n, l)
				}
			}
			if published != tt.published {
				t.Errorf("%d lines published in --json, want %d", published, tt.published)
			}
		})
	}
}

// journalMsgs is the number of commands the journal holds.
func journalMsgs(ctx context.Context, e *writerEnv) (int, error) {
	s, err := e.js.Stream(ctx, wire.JournalStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return int(info.State.Msgs), nil
}

// ackHolder is a loopback TCP proxy in front of the NATS server that, once
// a client published to the journal (an HPUB to journal.*), holds back
// what the server sends that client, the acknowledgements among it, until
// release: the fault of acknowledgements that are late or lost, with the
// real server behind.
type ackHolder struct {
	ln     net.Listener
	target string
	once   sync.Once
	open   chan struct{} // closed by release
}

func startAckHolder(t *testing.T, natsURL string) *ackHolder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ackHolder{ln: ln, target: strings.TrimPrefix(natsURL, "nats://"), open: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			published := make(chan struct{})
			wg.Go(func() { p.toServer(c, s, published) })
			wg.Go(func() { p.toClient(s, c, published) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.release()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *ackHolder) url() string { return "nats://" + p.ln.Addr().String() }

// release lets the held traffic through, and all after it.
func (p *ackHolder) release() { p.once.Do(func() { close(p.open) }) }

// toServer copies the client's bytes to the server, and closes published
// at the first publish to the journal.
func (p *ackHolder) toServer(c, s net.Conn, published chan struct{}) {
	defer s.Close()
	const marker = "HPUB " + wire.JournalPrefix + "."
	var tail []byte // the end of the previous read, for a marker split across two
	seen := false
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if !seen {
				window := append(tail, buf[:n]...)
				if bytes.Contains(window, []byte(marker)) {
					seen = true
					close(published)
				}
				tail = append(tail[:0], window[max(0, len(window)-len(marker)):]...)
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// toClient copies the server's bytes to the client, holding them once the
// client published to the journal until release.
func (p *ackHolder) toClient(s, c net.Conn, published chan struct{}) {
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			select {
			case <-published:
				<-p.open
			default:
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

package azurite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// EnvBinary names the environment variable holding the path of the
// azurite-table executable.
const EnvBinary = "TABLEJOURNAL_AZURITE"

// The emulator's well-known development account. The key is public (it is
// documented by Microsoft for every Azurite and Storage Emulator install), so
// it is no secret.
const (
	AccountName = "devstoreaccount1"
	AccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// toolsBin is where `make azurite` installs the binary, relative to the
// repository root.
var toolsBin = filepath.Join(".tools", "azurite", "node_modules", ".bin", "azurite-table")

// startTimeout bounds the wait for a new server when ctx has no deadline.
const startTimeout = 60 * time.Second

// Server is a running Azurite table server, and the blob server beside it
// once a test asked for it (BlobConnectionString).
type Server struct {
	service string // "table" or "blob"
	bin     string
	host    string // "127.0.0.1:port"
	dir     string // working directory, removed by Stop
	cmd     *exec.Cmd
	out     *tailBuffer
	done    chan struct{} // closed when the process has exited
	err     error         // the process's exit status, set before done closes

	blobOnce sync.Once
	blob     *Server
	blobErr  error

	tls       *tlsFiles // the HTTPS certificate and OAuth account of an OAuth server, or nil
	oauthOnce sync.Once
	oauth     *Server
	oauthErr  error

	stopOnce sync.Once
	stopErr  error
}

// Binary returns the path of the azurite-table executable: $TABLEJOURNAL_AZURITE
// if set, else .tools/azurite/node_modules/.bin/azurite-table in the working
// directory or the nearest parent that has one.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("azurite: %s=%s: %w (run `make azurite` in the repository root)", EnvBinary, p, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("azurite: %w", err)
	}
	for {
		p := filepath.Join(dir, toolsBin)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("azurite: azurite-table not found: run `make azurite` in the repository root, or set %s to its path", EnvBinary)
		}
		dir = parent
	}
}

// Start starts an Azurite table server on a free loopback port and waits
// until it answers HTTP requests. ctx bounds the start only (60 s if it has
// no deadline); the server runs until Stop.
//
// Flags: --inMemoryPersistence (nothing on disk, fresh state per server),
// --skipApiVersionCheck (the SDK may send an API version newer than the
// pinned Azurite knows), --disableProductStyleUrl (the account is the first
// path segment, as in the connection string's TableEndpoint),
// --disableTelemetry and --silent. --loose is NOT passed: strict mode rejects
// headers and parameters Azurite does not implement instead of ignoring
// them, so a request whose meaning Azurite would silently change fails in
// tests instead of passing there and behaving differently on Azure.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	// A free port is found by binding :0 and releasing it; another process
	// may take it in between, so a server that exits at once is retried on
	// a new port.
	return startService(ctx, bin, "table", nil)
}

// startService starts the Azurite service ("table" or "blob") of bin, on a
// free port; over HTTPS in OAuth mode when tf is not nil.
func startService(ctx context.Context, bin, service string, tf *tlsFiles) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(ctx, bin, service, tf)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, bin, service string, tf *tlsFiles) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("azurite: find a free port: %w", err)
	}
	return startOn(ctx, bin, service, port, tf)
}

// startOn starts the service on port.
func startOn(ctx context.Context, bin, service string, port int, tf *tlsFiles) (*Server, error) {
	dir, err := os.MkdirTemp("", "azurite-")
	if err != nil {
		return nil, fmt.Errorf("azurite: %w", err)
	}
	s := &Server{
		service: service,
		bin:     bin,
		host:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:     dir,
		out:     &tailBuffer{max: 8 << 10},
		done:    make(chan struct{}),
		tls:     tf,
	}
	args := []string{
		"--" + service + "Host", "127.0.0.1",
		"--" + service + "Port", strconv.Itoa(port),
		"--inMemoryPersistence",
		"--skipApiVersionCheck",
		"--disableProductStyleUrl",
		"--disableTelemetry",
		"--silent",
	}
	s.cmd = exec.Command(bin, append(args, tf.args()...)...)
	s.cmd.Env = append(os.Environ(), tf.env()...)
	s.cmd.Dir = dir // anything Azurite writes (debug logs) lands in dir
	s.cmd.Stdout = s.out
	s.cmd.Stderr = s.out
	s.cmd.SysProcAttr = sysProcAttr()
	// Pdeathsig fires when the thread that started the child exits, not
	// the process: start and wait on one locked thread, which then lives
	// exactly as long as the server.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("azurite: start %s: %w", bin, err)
	}
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the server until it answers an HTTP request, it exits, or
// ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second, Transport: s.tls.transport()}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		probe := s.Endpoint() + "/Tables"
		if s.service == "blob" {
			probe = s.Endpoint() + "?comp=list"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, probe, nil)
		if err != nil {
			return fmt.Errorf("azurite: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil // any HTTP answer, even 403 unauthenticated, means it serves
		}
		select {
		case <-s.done:
			return fmt.Errorf("azurite: exited before serving on %s (%v): %s", s.host, s.err, bytes.TrimSpace(s.out.Bytes()))
		case <-ctx.Done():
			return fmt.Errorf("azurite: not serving on %s: %w: %s", s.host, ctx.Err(), bytes.TrimSpace(s.out.Bytes()))
		case <-tick.C:
		}
	}
}

// Halt terminates the server process but keeps its port, for Restart: the
// service is gone as in an outage. Clients get refused connections.
func (s *Server) Halt() error {
	s.terminate()
	return nil
}

// terminate ends the server process: SIGTERM, then SIGKILL after five
// seconds. It reports whether it had to kill.
func (s *Server) terminate() (killed bool) {
	select {
	case <-s.done:
		return false
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return false
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return true
	}
}

// Restart starts a new server process on the port of a halted one (it
// halts it first if it is running). Azurite runs in memory: the new server
// starts empty, as a store that lost everything would.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Halt(); err != nil {
		return err
	}
	_, portStr, err := net.SplitHostPort(s.host)
	if err != nil {
		return fmt.Errorf("azurite: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("azurite: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	n, err := startOn(ctx, s.bin, s.service, port, s.tls)
	if err != nil {
		return err
	}
	os.RemoveAll(s.dir)
	s.dir, s.cmd, s.out, s.done, s.err = n.dir, n.cmd, n.out, n.done, n.err
	return nil
}

// Endpoint returns the service URL of the development account, such as
// http://127.0.0.1:41234/devstoreaccount1; of an OAuth server, the https
// URL of its account (OAuthAccount).
func (s *Server) Endpoint() string {
	if s.tls != nil {
		return "https://" + s.host + "/" + OAuthAccount
	}
	return "http://" + s.host + "/" + AccountName
}

// BlobConnectionString returns a connection string for the development
// account that names both the table endpoint and the endpoint of a blob
// server. The blob server (azurite-blob, beside azurite-table) is started
// on the first call, once per Server, and stopped with it.
func (s *Server) BlobConnectionString(ctx context.Context) (string, error) {
	s.blobOnce.Do(func() {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, startTimeout)
			defer cancel()
		}
		s.blob, s.blobErr = startService(ctx, filepath.Join(filepath.Dir(s.bin), "azurite-blob"), "blob", s.tls)
	})
	if s.blobErr != nil {
		return "", s.blobErr
	}
	return s.ConnectionString() + "BlobEndpoint=" + s.blob.Endpoint() + ";", nil
}

// Blob returns the blob server beside s, starting it as
// BlobConnectionString does; beside an OAuth server, an OAuth blob server
// with the same certificate and account.
func (s *Server) Blob(ctx context.Context) (*Server, error) {
	if _, err := s.BlobConnectionString(ctx); err != nil {
		return nil, err
	}
	return s.blob, nil
}

// BlobEndpoint returns the service URL of the account on Blob's server.
func (s *Server) BlobEndpoint(ctx context.Context) (string, error) {
	b, err := s.Blob(ctx)
	if err != nil {
		return "", err
	}
	return b.Endpoint(), nil
}

// ConnectionString returns a connection string for the development account
// with its well-known key.
func (s *Server) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + AccountName +
		";AccountKey=" + AccountKey + ";TableEndpoint=" + s.Endpoint() + ";"
}

// Stop terminates the server and removes its working directory. It is safe
// to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		defer os.RemoveAll(s.dir)
		if s.oauth != nil {
			if err := s.oauth.Stop(); err != nil {
				s.stopErr = err
			}
		}
		if s.tls != nil && s.tls.owner == s {
			defer os.RemoveAll(s.tls.dir)
		}
		if s.blob != nil {
			if err := s.blob.Stop(); err != nil {
				s.stopErr = err
			}
		}
		if s.terminate() {
			s.stopErr = errors.New("azurite: killed after SIGTERM timed out")
		}
	})
	return s.stopErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

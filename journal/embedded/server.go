package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tablejournal/tablejournal/internal/lockfile"
)

// DefaultListen is the embedded server's default address.
const DefaultListen = "127.0.0.1:4222"

// MaxPayload is the embedded server's message size limit, above
// journal.MinMaxPayload (what the largest command and its change events
// need); NATS's default of 1 MiB would refuse them.
const MaxPayload = 8 << 20

// Config configures the embedded NATS server.
type Config struct {
	// Dir is the folder of the JetStream file store. Required.
	Dir string
	// Listen is the client address, host:port. The host must be a loopback
	// address: the embedded server has no authentication. Port 0 or -1
	// picks a free port. If empty, "127.0.0.1:4222".
	Listen string
	// NoSync turns off the fsync before every acknowledgement. The default
	// (false) sets SyncAlways: Jepsen's analysis of NATS 2.12.1 (2025-12-08,
	// jepsen.io/analyses/nats-2.12.1, nats-server issue #7564) found that with
	// the default sync_interval of two minutes JetStream acknowledges writes
	// it has not flushed, and an OS crash or power failure loses them. A
	// process crash alone does not (the page cache survives it), so NoSync
	// trades only machine-crash durability for throughput.
	NoSync bool
	// Logger receives the server's log; Debug and Trace are off. If nil,
	// slog.Default().
	Logger *slog.Logger
}

// Server is an embedded nats-server with JetStream.
type Server struct {
	ns   *server.Server
	cfg  Config
	lock *lockfile.Lock
}

// SyncsEveryWrite reports whether the running server's JetStream flushes
// every write to disk before acknowledging it (sync_always): then an
// acknowledged command survives the machine losing power
// (docs/operating.md, "What an acknowledged publish survives").
func (s *Server) SyncsEveryWrite() bool {
	jsc := s.ns.JetStreamConfig()
	return jsc != nil && jsc.SyncAlways
}

// Start starts a nats-server in this process with JetStream and a file
// store under cfg.Dir, and returns once it accepts clients. It holds the
// lock file cfg.Dir + ".lock" until Shutdown (or the process's end): a
// second server on the same store, in this process or another, would hand
// out the same sequences to different commands, so Start refuses it with
// an error wrapping ErrLocked that names the holder.
func Start(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("start server: no store dir")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("start server: listen %q: %w", cfg.Listen, err)
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("start server: listen %q: the embedded server listens on loopback only", cfg.Listen)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < -1 || port > 65535 {
		return nil, fmt.Errorf("start server: listen %q: bad port", cfg.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	lock, err := lockfile.Acquire(dir + ".lock")
	if err != nil {
		return nil, fmt.Errorf("start server: JetStream store %s: %w", dir, err)
	}
	srv, err := start(cfg, dir, host, port)
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	srv.lock = lock
	return srv, nil
}

func start(cfg Config, dir, host string, port int) (*Server, error) {
	opts := &server.Options{
		ServerName:             "tablejournal",
		Host:                   host,
		Port:                   port,
		JetStream:              true,
		StoreDir:               dir,
		SyncAlways:             !cfg.NoSync,
		MaxPayload:             MaxPayload,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	log := slogAdapter{l: cfg.Logger, fatal: make(chan string, 1)}
	ns.SetLoggerV2(log, false, false, false)
	ns.Start()
	// A fatal error (such as the port in use) only reaches the log; watch it
	// rather than wait out the whole readiness timeout.
	for deadline := time.Now().Add(30 * time.Second); !ns.ReadyForConnections(50 * time.Millisecond); {
		select {
		case msg := <-log.fatal:
			ns.Shutdown()
			return nil, fmt.Errorf("start server on %s: %s", cfg.Listen, msg)
		default:
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			return nil, fmt.Errorf("start server on %s: not ready for connections after 30s", cfg.Listen)
		}
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		return nil, fmt.Errorf("start server on %s: JetStream did not start (store dir %s)", cfg.Listen, dir)
	}
	addr := ns.Addr().(*net.TCPAddr)
	cfg.Dir = dir
	cfg.Listen = net.JoinHostPort(host, strconv.Itoa(addr.Port))
	return &Server{ns: ns, cfg: cfg}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ClientURL returns the URL clients connect to, such as
// nats://127.0.0.1:4222.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Config returns the server's configuration, with Dir made absolute and
// Listen naming the port actually bound; Start(s.Config()) restarts it on
// the same store and address.
func (s *Server) Config() Config { return s.cfg }

// Shutdown stops the server, waits until it has stopped and releases its
// store's lock.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	_ = s.lock.Release()
}

// ErrLocked is wrapped by Start's error when another server holds the
// store folder. Checked with errors.Is.
var ErrLocked = lockfile.ErrLocked

// ServerLogger adapts l to nats-server's logger, for servers started
// elsewhere (the test kit's clusters); Debug and Trace map to slog's Debug.
func ServerLogger(l *slog.Logger) server.Logger {
	return slogAdapter{l: l, fatal: make(chan string, 1)}
}

// slogAdapter feeds nats-server's log into slog, and its first fatal error
// into fatal.
type slogAdapter struct {
	l     *slog.Logger
	fatal chan string
}

func (a slogAdapter) log(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if a.l.Enabled(ctx, level) {
		a.l.Log(ctx, level, fmt.Sprintf(format, v...), "component", "nats-server")
	}
}

// Noticef logs at debug: the server's banner is a screen of notices, and
// the projector's own startup line says what runs where.
func (a slogAdapter) Noticef(format string, v ...any) { a.log(slog.LevelDebug, format, v) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.log(slog.LevelWarn, format, v) }
func (a slogAdapter) Fatalf(format string, v ...any) {
	a.log(slog.LevelError, format, v)
	select {
	case a.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}
func (a slogAdapter) Errorf(format string, v ...any) { a.log(slog.LevelError, format, v) }
func (a slogAdapter) Debugf(format string, v ...any) { a.log(slog.LevelDebug, format, v) }
func (a slogAdapter) Tracef(format string, v ...any) { a.log(slog.LevelDebug-4, format, v) }

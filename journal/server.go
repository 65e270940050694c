package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultListen is the embedded server's default address.
const DefaultListen = "127.0.0.1:4222"

// MaxPayload is the embedded server's message size limit. A command's
// transaction may hold 4 MiB of entity data (events.MaxCommandBytes), which
// JSON with base64 binaries inflates by a third; NATS's default of 1 MiB
// would refuse it. An external server needs max_payload of at least this.
const MaxPayload = 8 << 20

// ServerConfig configures the embedded NATS server.
type ServerConfig struct {
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
	ns  *server.Server
	cfg ServerConfig
}

// StartServer starts a nats-server in this process with JetStream and a
// file store under cfg.Dir, and returns once it accepts clients.
func StartServer(cfg ServerConfig) (*Server, error) {
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
// Listen naming the port actually bound; StartServer(s.Config()) restarts
// it on the same store and address.
func (s *Server) Config() ServerConfig { return s.cfg }

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

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

func (a slogAdapter) Noticef(format string, v ...any) { a.log(slog.LevelInfo, format, v) }
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

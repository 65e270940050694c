package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Defaults of Config.
const (
	DefaultDurable = wire.DefaultDurable
	DefaultWorkers = 8
	DefaultIssuer  = "tablejournal-replay"
)

// Config configures a Source.
type Config struct {
	// Store is the table store the projector writes. Required.
	Store store.Store
	// JetStream reaches the journal and the outcomes. It may be nil for the
	// operations that read only the tables (AsOf and History at a sequence,
	// Load, Snapshot at a given sequence); the others fail with
	// ErrNoJournal.
	JetStream jetstream.JetStream
	// Journal names the journal stream. If empty, wire.JournalStream.
	Journal string
	// Durable is the prefix of the projector's durable consumers
	// ("<Durable>-<shard>"), read to find the sequence the projector has
	// fully applied. If empty, DefaultDurable ("projector").
	Durable string
	// Workers bounds the partitions rebuilt, snapshotted or loaded at once.
	// If zero, 8.
	Workers int
	// Issuer is the issuer of the commands undo and restore publish. If
	// empty, "tablejournal-replay".
	Issuer string
	// Logger receives progress notes. If nil, slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Journal == "" {
		c.Journal = wire.JournalStream
	}
	if c.Durable == "" {
		c.Durable = DefaultDurable
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Issuer == "" {
		c.Issuer = DefaultIssuer
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("no table store"))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: must not be negative", c.Workers))
	}
	return errors.Join(errs...)
}

// Source is what every part of replay reads and writes through: the table
// store, and optionally the journal with its outcomes. The sub-packages
// (history, repair, rebuild, snapshot, retention, erasure) each take one.
// It is safe for concurrent use.
type Source struct {
	cfg Config
	st  store.Store
	js  jetstream.JetStream
	j   *journal.Journal // nil without JetStream
	// layouts remembers the settled layouts by lower-case table name
	// (Layout): a layout never changes once a table has rows (SPEC §3).
	layouts *sync.Map
}

// New returns a Source. With a JetStream connection it opens the journal
// stream, which must exist.
func New(ctx context.Context, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replay config: %w", err)
	}
	cfg.setDefaults()
	r := &Source{cfg: cfg, st: cfg.Store, js: cfg.JetStream, layouts: new(sync.Map)}
	if r.js != nil {
		j, err := journal.Open(ctx, r.js, cfg.Journal)
		if err != nil {
			return nil, err
		}
		r.j = j
	}
	return r, nil
}

// Store returns the table store r reads.
func (r *Source) Store() store.Store { return r.st }

// Journal returns the journal, or nil without a JetStream connection.
func (r *Source) Journal() *journal.Journal { return r.j }

// JetStream returns the JetStream connection, or nil without one.
func (r *Source) JetStream() jetstream.JetStream { return r.js }

// WithIssuer returns a Source like r whose commands name issuer (a
// console publishes each repair as the user who confirmed it). It shares
// r's store and connections.
func (r *Source) WithIssuer(issuer string) *Source {
	c := *r
	if issuer != "" {
		c.cfg.Issuer = issuer
	}
	return &c
}

// Config returns the configuration r was made with, defaults filled in.
func (r *Source) Config() Config { return r.cfg }

// NeedJournal fails with ErrNoJournal, naming what needed it, when r has
// no JetStream connection.
func (r *Source) NeedJournal(what string) error {
	if r.j == nil {
		return fmt.Errorf("%s: %w", what, ErrNoJournal)
	}
	return nil
}

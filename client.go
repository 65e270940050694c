package tablejournal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Client publishes commands, waits for their outcomes, reads current rows
// and follows the change feed. It is safe for concurrent use. Close it when
// done.
type Client struct {
	nc       *nats.Conn
	ownConn  bool
	js       jetstream.JetStream
	w        *journal.Writer
	outcomes *outcomes.Reader
	o        options

	tables store.Store

	mu      sync.Mutex
	journal *journal.Journal // opened on first use

	layouts sync.Map // table → wire.Layout, once known for good (layoutOf)

	recent        recentPublishes // the command IDs and outcome watches of its latest publishes (recent.go)
	streamChecked atomic.Bool     // the first Publish found the journal stream
}

// Option configures a Client.
type Option func(*options)

type options struct {
	tables   store.Store
	stream   string
	durable  string
	prop     propagation.TextMapPropagator
	issuer   string
	natsOpts []nats.Option
}

// WithStore is the table store the projector writes, for the Client's
// reads (Get, Partition, Query, History). The caller opens it and closes
// it after the Client: store/azure for Azure Tables or Cosmos DB,
// store/sqlite for the embedded store, or store/stores.Open for the
// projector's --tables forms (a connection string, an endpoint URL,
// "sqlite:PATH", or "" for the embedded store in the data folder), which
// links both. Without it the Client publishes and follows, and its reads
// fail with ErrNoTables. The Client links no store of its own, so a
// service on Azure does not carry the embedded one.
func WithStore(s store.Store) Option {
	return func(o *options) { o.tables = s }
}

// WithStream names the journal stream; the default is the projector's
// ("JOURNAL"). Connect does not need it to exist yet; Publish fails with
// ErrNoJournal while it does not.
func WithStream(name string) Option { return func(o *options) { o.stream = name } }

// WithDurable names the prefix of the projection's consumers
// ("<prefix>-<shard>"), which AfterSeq and WaitApplied read the applied
// position from. The default, wire.DefaultDurable ("projector"), is what
// the projector command always uses; another is needed only for a
// projection a program runs with another projection.Config.Durable
// (replay's --durable names the same prefix).
func WithDurable(prefix string) Option { return func(o *options) { o.durable = prefix } }

// WithPropagator sets how the trace context of a publish's context.Context
// reaches the command's message, and how Follow restores it from a change
// event. The default is W3C Trace Context (propagation.TraceContext).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) { o.prop = p }
}

// WithIssuer names the service in every command it publishes (the
// command's "issuer" field).
func WithIssuer(name string) Option { return func(o *options) { o.issuer = name } }

// WithNATSOptions passes options (credentials, TLS, name) to the NATS
// connection Connect opens.
func WithNATSOptions(opts ...nats.Option) Option {
	return func(o *options) { o.natsOpts = append(o.natsOpts, opts...) }
}

// Connect connects to the NATS server at url and returns a Client of the
// journal there, reading rows from the table store of WithStore.
func Connect(ctx context.Context, url string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.stream == "" {
		o.stream = wire.JournalStream
	}
	if o.durable == "" {
		o.durable = wire.DefaultDurable
	}
	if o.prop == nil {
		o.prop = propagation.TraceContext{}
	}
	nc, err := nats.Connect(url, o.natsOpts...)
	if err != nil {
		return nil, fmt.Errorf("tablejournal: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("tablejournal: %w", err)
	}
	c := &Client{nc: nc, ownConn: true, js: js, o: o, outcomes: outcomes.NewReader(js), tables: o.tables}
	c.w = journal.NewWriter(js, o.stream, journal.WithHeaders(c.inject))
	return c, nil
}

// Close closes the NATS connection. The table store of WithStore is the
// caller's to close.
func (c *Client) Close() error {
	c.recent.stopAll()
	if c.ownConn {
		c.nc.Close()
	}
	return nil
}

// openJournal opens the journal stream once.
func (c *Client) openJournal(ctx context.Context) (*journal.Journal, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.journal != nil {
		return c.journal, nil
	}
	j, err := journal.Open(ctx, c.js, c.o.stream)
	if err != nil {
		return nil, fmt.Errorf("tablejournal: %w", err)
	}
	c.journal = j
	return j, nil
}

// checkStream makes sure, once, that the journal stream exists before a
// publish: to a stream that does not, the journal's subjects go to no
// stream (the publish retries until its budget is spent) or to another
// one (JetStream refuses it with "expected stream does not match").
// Other errors, such as a user without the right to read stream
// information, are left to the publish to report.
func (c *Client) checkStream(ctx context.Context) error {
	if c.streamChecked.Load() {
		return nil
	}
	_, err := c.openJournal(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w %s: check WithStream, or start the projector, which creates it", ErrNoJournal, c.o.stream)
	case errors.Is(err, journal.ErrNotJournal):
		return fmt.Errorf("%w %s: %w", ErrNoJournal, c.o.stream, err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	c.streamChecked.Store(true)
	return nil
}

// inject writes the trace context of ctx onto a command's headers.
func (c *Client) inject(ctx context.Context, h nats.Header) {
	c.o.prop.Inject(ctx, headerCarrier(h))
}

// headerCarrier is a propagation.TextMapCarrier over NATS headers, which,
// unlike HTTP's, keep the case of their names: W3C's are lower case.
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := nats.Header(h).Get(key); v != "" {
		return v
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

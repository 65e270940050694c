package journal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/wire"
)

// Defaults of Config.
const (
	defaultShards = 16
)

// maxShards bounds Config.Shards.
const maxShards = 1024

// Config describes the journal stream. The zero Config is the default
// journal.
type Config struct {
	// Stream is the stream's name. If empty, wire.JournalStream ("JOURNAL").
	Stream string
	// Shards is the number of shards the stream spreads partitions over; it
	// is fixed when the stream is created. If zero, 16.
	Shards int
	// Duplicates is the window within which JetStream drops a command whose
	// ID it has already stored. If zero, 2 minutes. It should exceed the
	// Writer's retry budget (one minute by default).
	Duplicates time.Duration
	// Replicas is the stream's replication factor in a cluster. If zero,
	// a new stream gets 1 and an existing one is used at whatever count it
	// has; otherwise an existing stream with another count is refused with
	// ErrReplicasMismatch (see CheckReplicas).
	Replicas int
	// AllowTrim creates the stream without DenyDelete and DenyPurge, so that
	// an operator may purge or delete messages (retention). By default
	// (false) the journal, the source of truth, refuses both; an existing
	// journal without them gets them (see Ensure).
	AllowTrim bool
	// AllowMsgDelete creates the stream without DenyDelete but with
	// DenyPurge, so that an erase (SPEC §10) can securely delete single
	// messages while the journal still refuses purges. An existing journal
	// created so is not turned back to deny-delete silently.
	AllowMsgDelete bool
}

func (c *Config) setDefaults() {
	if c.Stream == "" {
		c.Stream = wire.JournalStream
	}
	if c.Shards == 0 {
		c.Shards = defaultShards
	}
	if c.Duplicates == 0 {
		c.Duplicates = jsapi.DefaultDuplicates
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
}

// Validate reports every problem of c at once. Zero fields are valid: they
// take their defaults.
func (c Config) Validate() error {
	var errs []error
	if c.Stream != "" && !validName(c.Stream) {
		errs = append(errs, fmt.Errorf("stream name %q: must be non-empty without spaces, '.', '*', '>', '/' or '\\'", c.Stream))
	}
	if c.Shards < 0 || c.Shards > maxShards {
		errs = append(errs, fmt.Errorf("shards %d: must be between 1 and %d", c.Shards, maxShards))
	}
	if c.Duplicates < 0 {
		errs = append(errs, fmt.Errorf("duplicates window %s: must not be negative", c.Duplicates))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d: must be between 1 and 5", c.Replicas))
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n.*>/\\")
}

// transformDest is the stream's subject transform destination for n shards:
// it inserts the shard, computed by the server from table and pk-token.
func transformDest(n int) string {
	return fmt.Sprintf("%s.{{wildcard(1)}}.{{partition(%d,1,2)}}.{{wildcard(2)}}", wire.JournalPrefix, n)
}

func (c Config) streamConfig() jetstream.StreamConfig {
	meta := map[string]string{wire.MetadataShards: strconv.Itoa(c.Shards)}
	if c.AllowTrim {
		meta[wire.MetadataAllowTrim] = "true"
	}
	if c.AllowMsgDelete {
		meta[wire.MetadataAllowMsgDelete] = "true"
	}
	return jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "tablejournal journal: the commands, source of truth of the projected tables (journal.<table>.<shard>.<pk-token>)",
		Subjects:    wire.JournalSubjects(),
		SubjectTransform: &jetstream.SubjectTransformConfig{
			Source:      wire.JournalPrefix + ".*.*",
			Destination: transformDest(c.Shards),
		},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		Duplicates:  c.Duplicates,
		Replicas:    c.Replicas,
		AllowDirect: true,
		DenyDelete:  !c.AllowTrim && !c.AllowMsgDelete,
		DenyPurge:   !c.AllowTrim,
		Metadata:    meta,
	}
}

// Journal is an opened journal stream. It is safe for concurrent use.
type Journal struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	shards  int
	changes []string
}

// Ensure creates the journal stream described by cfg, or checks an existing
// one. An existing stream that records another shard count than cfg's fails
// with ErrShardMismatch, and one with another replica count than cfg asks
// for with ErrReplicasMismatch (CheckReplicas). Otherwise what differs is
// updated where JetStream allows it (jsapi.EnsureStream): the description,
// deny-delete and deny-purge (unless AllowTrim), and the duplicate window
// when cfg sets it; Changes lists what was. A stream that denies purges
// while cfg allows trimming fails with ErrStreamConfig.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) (*Journal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("journal config: %w", err)
	}
	m := jsapi.Managed{Duplicates: cfg.Duplicates != 0}
	replicas := cfg.Replicas
	cfg.setDefaults()
	existing, err := Open(ctx, js, cfg.Stream)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	if existing != nil {
		if err := existing.checkShards(cfg.Shards); err != nil {
			return nil, err
		}
		have := existing.stream.CachedInfo().Config
		if err := CheckReplicas(have, replicas); err != nil {
			return nil, err
		}
		if !cfg.AllowTrim && !have.DenyDelete && !have.DenyPurge && have.Metadata[wire.MetadataAllowTrim] == "true" {
			// Denying now could never be undone: the operator chose
			// trimming when creating it, so say so rather than decide.
			return nil, fmt.Errorf("%w: stream %s was created to allow trimming (--journal-allow-trim): start with that again, or turn on deny_delete and deny_purge in its configuration to refuse trimming for good",
				ErrStreamConfig, cfg.Stream)
		}
	}
	if err := checkAllowMsgDelete(existing, cfg); err != nil {
		return nil, err
	}
	s, changes, err := jsapi.EnsureStream(ctx, js, cfg.streamConfig(), m)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		// Perhaps created by another process meanwhile: check it.
		if existing, err = Open(ctx, js, cfg.Stream); err != nil {
			return nil, err
		}
		if err := existing.checkShards(cfg.Shards); err != nil {
			return nil, err
		}
	}
	return &Journal{js: js, stream: s, name: cfg.Stream, shards: cfg.Shards, changes: changes}, nil
}

func (j *Journal) checkShards(want int) error {
	if j.shards != want {
		return fmt.Errorf("%w: stream %s was created with %d shards, configured with %d; re-sharding would move partitions between shards, so create a new stream instead",
			ErrShardMismatch, j.name, j.shards, want)
	}
	return nil
}

// Changes describes what Ensure updated in an existing stream's
// configuration, for the caller to log; nil if it created the stream or
// changed nothing.
func (j *Journal) Changes() []string { return j.changes }

// Open opens the existing journal stream name and reads its shard count
// from the stream's metadata.
func Open(ctx context.Context, js jetstream.JetStream, name string) (*Journal, error) {
	if name == "" {
		name = wire.JournalStream
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", name, err)
	}
	sc := s.CachedInfo().Config
	raw, ok := sc.Metadata[wire.MetadataShards]
	if !ok {
		return nil, fmt.Errorf("%w: stream %s has no %s metadata", ErrNotJournal, name, wire.MetadataShards)
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxShards {
		return nil, fmt.Errorf("%w: stream %s has %s=%q", ErrNotJournal, name, wire.MetadataShards, raw)
	}
	if st := sc.SubjectTransform; st == nil || st.Destination != transformDest(n) {
		return nil, fmt.Errorf("%w: stream %s does not transform subjects to %s", ErrNotJournal, name, transformDest(n))
	}
	return &Journal{js: js, stream: s, name: name, shards: n}, nil
}

// Name returns the stream's name.
func (j *Journal) Name() string { return j.name }

// JetStream returns the JetStream context the journal was opened with.
func (j *Journal) JetStream() jetstream.JetStream { return j.js }

// Shards returns the shard count recorded in the stream.
func (j *Journal) Shards() int { return j.shards }

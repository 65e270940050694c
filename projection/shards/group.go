package shards

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// DefaultBucket is the ownership bucket of the default journal and
// consumers; BucketFor names the others.
const DefaultBucket = "TABLEJOURNAL_OWNERS"

// DefaultLeaseTTL is how long a lease outlives its owner's last renewal.
const DefaultLeaseTTL = 5 * time.Second

// Key prefixes in the bucket.
const (
	ShardKeyPrefix    = "shard."
	InstanceKeyPrefix = "instance."
)

// Log keys.
const (
	LogShard    = "shard"
	LogInstance = "instance"
)

// ShardKey returns the key of shard n's lease: shard.<n>.
func ShardKey(n int) string { return ShardKeyPrefix + strconv.Itoa(n) }

// InstanceKey returns the key of an instance's presence: instance.<id>.
func InstanceKey(id string) string { return InstanceKeyPrefix + id }

// BucketFor returns the ownership bucket of the projector consumers named
// durable on journal stream: DefaultBucket for the defaults
// (wire.JournalStream, wire.DefaultDurable), else DefaultBucket_<stream>_<durable>, so that projections
// with other consumers (into another store) are balanced on their own.
func BucketFor(stream, durable string) string {
	if (stream == "" || stream == wire.JournalStream) && (durable == "" || durable == wire.DefaultDurable) {
		return DefaultBucket
	}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, s)
	}
	if stream == "" {
		stream = wire.JournalStream
	}
	return DefaultBucket + "_" + clean(stream) + "_" + clean(durable)
}

// Lease is the value of a shard's key.
type Lease struct {
	// Owner is the instance ID of the owner.
	Owner string `json:"owner"`
	// Since is when the owner claimed the shard (RFC 3339, UTC, seconds).
	Since time.Time `json:"since"`
	// Epoch is the key's revision at which the owner claimed it: it grows
	// with every change of owner, and stays while the owner renews. Zero in
	// the first revision (the claim itself).
	Epoch uint64 `json:"epoch,omitempty"`
	// Token tells apart two processes started with the same instance ID.
	Token string `json:"token,omitempty"`
}

// Member is the value of an instance's presence key.
type Member struct {
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	Token   string    `json:"token"`
}

// Config configures a Group.
type Config struct {
	// Bucket is the ownership bucket. If empty, DefaultBucket.
	Bucket string
	// Shards is the journal's shard count. Required.
	Shards int
	// InstanceID names this instance in the bucket and the logs. If empty,
	// DefaultInstanceID(). An instance that restarts with the ID it had
	// takes its leases back at once instead of waiting for them to expire;
	// two live instances must never share an ID.
	InstanceID string
	// LeaseTTL is how long a lease outlives its owner's last renewal: the
	// longest a killed instance's shards wait for a new owner. Whole
	// seconds, at least 2. If zero, DefaultLeaseTTL. Owners renew every
	// fifth of it and stop applying a shard whose lease they could not
	// renew for four fifths of it.
	LeaseTTL time.Duration
	// Replicas is the bucket's replica count when it is created, and the
	// count an existing bucket must have (journal.CheckReplicas). If zero,
	// 1 when created, any when it exists.
	Replicas int
	// Logger receives one line per ownership change of this instance. If
	// nil, slog.Default().
	Logger *slog.Logger
}

var validID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Shards < 1 {
		errs = append(errs, fmt.Errorf("shards %d: must be at least 1", c.Shards))
	}
	if c.InstanceID != "" && !validID.MatchString(c.InstanceID) {
		errs = append(errs, fmt.Errorf("instance id %q: use letters, digits, '-' and '_' only", c.InstanceID))
	}
	if c.LeaseTTL != 0 && (c.LeaseTTL < 2*time.Second || c.LeaseTTL%time.Second != 0) {
		errs = append(errs, fmt.Errorf("lease ttl %s: must be whole seconds, at least 2s", c.LeaseTTL))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas %d: must be between 1 and 5", c.Replicas))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Bucket == "" {
		c.Bucket = DefaultBucket
	}
	if c.InstanceID == "" {
		c.InstanceID = DefaultInstanceID()
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DefaultInstanceID returns hostname-pid-<6 random hex digits>, with the
// characters a key cannot hold replaced by '_'.
func DefaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "projector"
	}
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, host)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(3))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Worker applies one shard until ctx is cancelled, then returns. When the
// lease was released (a handoff, the group stopping) it finishes its
// in-flight batch first; when the lease is lost or could not be renewed in
// time, context.Cause(ctx) is ErrNotOwner and it should abandon the batch
// (another instance may have the shard already). A non-nil error while ctx
// is live stops the whole group.
type Worker func(ctx context.Context, shard int) error

// Group is this instance's membership in the ownership bucket. Run it
// once.
type Group struct {
	cfg     Config
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	log     *slog.Logger
	token   string
	started time.Time

	renewEvery, fenceAfter time.Duration

	mu       sync.Mutex
	held     map[int]*keeper // leases this instance holds
	view     snapshotView
	ready    bool // the watcher delivered the bucket's current values
	closing  bool
	fatal    error
	wake     chan struct{}
	keepers  sync.WaitGroup
	worker   Worker
	runCtx   context.Context
	stopRun  context.CancelCauseFunc
	lastSeen time.Time // of any watcher event
}

// snapshotView is the watcher's picture of the bucket.
type snapshotView struct {
	leases  map[int]viewLease
	members map[string]string // id → token
}

type viewLease struct {
	Lease
	rev uint64
}

// Join opens (creating if needed) the ownership bucket. Run starts taking
// part.
func Join(ctx context.Context, js jetstream.JetStream, cfg Config) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shard ownership: %w", err)
	}
	cfg.setDefaults()
	kv, err := ensureBucket(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	return &Group{
		cfg: cfg, js: js, kv: kv, token: randomHex(8), started: time.Now().UTC().Truncate(time.Second),
		log:        cfg.Logger.With(LogInstance, cfg.InstanceID),
		renewEvery: cfg.LeaseTTL / 5, fenceAfter: cfg.LeaseTTL * 4 / 5,
		held: make(map[int]*keeper), wake: make(chan struct{}, 1),
	}, nil
}

// markerTTL is how long the bucket keeps the marker of an expired key.
const markerTTL = time.Minute

func ensureBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         cfg.Bucket,
		Description:    "tablejournal projector shard leases and live instances",
		History:        1,
		Storage:        jetstream.FileStorage,
		Replicas:       max(cfg.Replicas, 1),
		LimitMarkerTTL: markerTTL,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if err == nil {
			var s jetstream.Stream
			if s, err = js.Stream(ctx, "KV_"+cfg.Bucket); err == nil {
				sc := s.CachedInfo().Config
				if !sc.AllowMsgTTL || sc.SubjectDeleteMarkerTTL == 0 {
					err = fmt.Errorf("%w: bucket %s has no per-key TTLs (LimitMarkerTTL); delete it while no projector runs and let the projector create it", ErrBucket, cfg.Bucket)
				} else {
					err = journal.CheckReplicas(sc, cfg.Replicas)
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ownership bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// ID returns this instance's ID.
func (g *Group) ID() string { return g.cfg.InstanceID }

// Owned returns the shards this instance holds and applies, in order.
func (g *Group) Owned() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for sh, k := range g.held {
		if k.active() {
			out = append(out, sh)
		}
	}
	slices.Sort(out)
	return out
}

// Confirm renews shard's lease now and returns its epoch, or an error
// wrapping ErrNotOwner when this instance does not hold it. A worker calls
// it before it does what only the owner may (deleting and recreating the
// shard's consumer): a renewed lease cannot expire, and so cannot pass to
// another instance, for a lease TTL after the call.
func (g *Group) Confirm(ctx context.Context, shard int) (uint64, error) {
	g.mu.Lock()
	k := g.held[shard]
	g.mu.Unlock()
	if k == nil {
		return 0, fmt.Errorf("shard %d: %w", shard, ErrNotOwner)
	}
	return k.confirm(ctx)
}

func (g *Group) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// subject is the stream subject of key in the bucket.
func (g *Group) subject(key string) string { return "$KV." + g.cfg.Bucket + "." + key }

// write stores v under key with the lease TTL, if the key's revision is
// still rev (0: the key has no message). The KV API has no TTL on Update,
// so this is the same publish with the Nats-TTL header added.
func (g *Group) write(ctx context.Context, key string, v any, rev uint64, check bool) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgTTL(g.cfg.LeaseTTL)}
	if check {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rev))
	}
	ack, err := g.js.PublishMsg(ctx, &nats.Msg{Subject: g.subject(key), Data: data}, opts...)
	if err != nil {
		if isWrongLastSeq(err) {
			return 0, fmt.Errorf("%w: %w", jetstream.ErrKeyRevisionMismatch, err)
		}
		return 0, err
	}
	return ack.Sequence, nil
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Run takes part in the group until ctx is cancelled: it keeps this
// instance's presence, watches the bucket, claims and releases shards by
// the balancing rule, and runs w for each shard it holds. When ctx ends it
// withdraws its presence, cancels every worker, waits for each to finish
// its batch, releases each lease as soon as its worker returned, and
// returns nil. It returns a worker's error (after the same shutdown) when a
// worker fails.
func (g *Group) Run(ctx context.Context, w Worker) error {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	g.mu.Lock()
	g.worker, g.runCtx, g.stopRun = w, runCtx, stop
	g.mu.Unlock()

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	bgWG.Add(2)
	go func() { defer bgWG.Done(); g.heartbeat(bg) }()
	go func() { defer bgWG.Done(); g.watch(bg) }()

	tick := time.NewTicker(g.renewEvery)
	defer tick.Stop()
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
		case <-tick.C:
			g.reconcile(runCtx)
		case <-g.wake:
			g.reconcile(runCtx)
		}
	}

	// Shut down: presence first, so the others stop counting this instance
	// and take the shards as they are released.
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.LeaseTTL)
	if err := g.kv.Delete(dctx, InstanceKey(g.cfg.InstanceID)); err != nil {
		g.log.Warn("withdrawing presence failed; it expires by itself", "err", err)
	}
	cancel()
	g.mu.Lock()
	for _, k := range g.held {
		k.release("shutdown")
	}
	g.mu.Unlock()
	g.keepers.Wait()
	stopBG()
	bgWG.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fatal
}

// fail stops the group because a worker failed.
func (g *Group) fail(err error) {
	g.mu.Lock()
	if g.fatal == nil {
		g.fatal = err
	}
	stop := g.stopRun
	g.mu.Unlock()
	stop(err)
}

// heartbeat rewrites this instance's presence every renewEvery.
func (g *Group) heartbeat(ctx context.Context) {
	m := Member{ID: g.cfg.InstanceID, Started: g.started, Token: g.token}
	failing := false
	for {
		g.mu.Lock()
		closing := g.closing
		g.mu.Unlock()
		if closing {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, g.renewEvery)
		_, err := g.write(wctx, InstanceKey(g.cfg.InstanceID), m, 0, false)
		cancel()
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			failing = true
			g.log.Warn("presence not renewed; retrying", "err", err)
		case err == nil && failing:
			failing = false
			g.log.Info("presence renewed again")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(g.renewEvery):
		}
	}
}

// watch keeps the view of the bucket current. A watcher that delivers
// nothing for three lease TTLs (this instance's own presence is rewritten
// every fifth of one) is replaced.
func (g *Group) watch(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := g.kv.WatchAll(ctx)
		if err != nil {
			g.log.Warn("watching the ownership bucket failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(g.renewEvery):
			}
			continue
		}
		g.mu.Lock()
		g.view = snapshotView{leases: make(map[int]viewLease), members: make(map[string]string)}
		g.ready = false
		g.lastSeen = time.Now()
		g.mu.Unlock()
		stall := time.NewTicker(g.cfg.LeaseTTL)
	events:
		for {
			select {
			case <-ctx.Done():
				break events
			case e, ok := <-w.Updates():
				if !ok {
					break events
				}
				g.apply(e)
			case <-stall.C:
				g.mu.Lock()
				stalled := time.Since(g.lastSeen) > 3*g.cfg.LeaseTTL
				g.mu.Unlock()
				if stalled {
					g.log.Warn("ownership watcher delivered nothing for 3 lease TTLs; restarting it")
					break events
				}
			}
		}
		stall.Stop()
		_ = w.Stop()
	}
}

// apply folds one watcher event into the view and tells a keeper whose
// lease changed hands.
func (g *Group) apply(e jetstream.KeyValueEntry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastSeen = time.Now()
	defer g.poke()
	if e == nil {
		g.ready = true
		return
	}
	key, gone := e.Key(), e.Operation() != jetstream.KeyValuePut
	switch {
	case strings.HasPrefix(key, InstanceKeyPrefix):
		id := strings.TrimPrefix(key, InstanceKeyPrefix)
		_, was := g.view.members[id]
		if gone {
			delete(g.view.members, id)
			if was && g.ready {
				g.log.Debug("instance left", "id", id)
			}
			return
		}
		var m Member
		_ = json.Unmarshal(e.Value(), &m)
		g.view.members[id] = m.Token
		if !was && g.ready {
			g.log.Debug("instance joined", "id", id)
		}
	case strings.HasPrefix(key, ShardKeyPrefix):
		sh, err := strconv.Atoi(strings.TrimPrefix(key, ShardKeyPrefix))
		if err != nil {
			return
		}
		old, had := g.view.leases[sh]
		k := g.held[sh]
		if gone {
			delete(g.view.leases, sh)
			if k != nil {
				k.poke() // renews at once; finds out whether the lease is gone
			} else if had && g.ready {
				g.log.Debug("shard free", LogShard, sh, "was", old.Owner)
			}
			return
		}
		var l Lease
		if err := json.Unmarshal(e.Value(), &l); err != nil {
			return
		}
		g.view.leases[sh] = viewLease{Lease: l, rev: e.Revision()}
		if k != nil && (l.Owner != g.cfg.InstanceID || l.Token != g.token) {
			k.lost("owned by " + l.Owner)
		} else if k == nil && g.ready && (!had || old.Owner != l.Owner) {
			g.log.Debug("shard owner", LogShard, sh, "owner", l.Owner)
		}
	}
}

// reconcile runs the balancing rule on the view and acts on it.
func (g *Group) reconcile(ctx context.Context) {
	g.mu.Lock()
	if !g.ready || g.closing {
		g.mu.Unlock()
		return
	}
	s := snapshot{shards: g.cfg.Shards, owners: make(map[int]string)}
	for id := range g.view.members {
		s.live = append(s.live, id)
	}
	slices.Sort(s.live)
	var mine []int
	for sh, k := range g.held {
		if !k.releasing() {
			mine = append(mine, sh)
		}
	}
	adopt := map[int]viewLease{}
	for sh, l := range g.view.leases {
		if _, ok := g.held[sh]; ok {
			s.owners[sh] = g.cfg.InstanceID
			continue
		}
		if l.Owner == g.cfg.InstanceID && l.Token != g.token {
			// A lease of the process that had this ID before (a restart):
			// take it back rather than wait for it to expire.
			adopt[sh] = l
		}
		s.owners[sh] = l.Owner
	}
	claim, release := plan(g.cfg.InstanceID, s, mine)
	for _, sh := range release {
		g.held[sh].release("handoff")
	}
	g.mu.Unlock()

	for sh, l := range adopt {
		g.claim(ctx, sh, l.rev, l.Since)
	}
	for _, sh := range claim {
		if ctx.Err() != nil || !g.claim(ctx, sh, 0, time.Time{}) {
			// A lost race or an unreachable server: look again next round.
			return
		}
	}
}

// claim takes shard's lease: with Create when rev is 0 (the key is absent
// or deleted), else by compare-and-set on rev (taking back this ID's own
// lease). It reports whether it took it. A stopping instance (ctx done, or
// Run closing) claims nothing, and gives back at once a lease whose write
// was in flight when the stop began.
func (g *Group) claim(ctx context.Context, shard int, rev uint64, since time.Time) bool {
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if closing || ctx.Err() != nil {
		return false
	}
	if since.IsZero() {
		since = time.Now().UTC().Truncate(time.Second)
	}
	l := Lease{Owner: g.cfg.InstanceID, Since: since, Token: g.token}
	// Once sent, the write may be stored whatever happens to ctx: only its
	// answer says whether there is a lease to keep or give back, so it is
	// not cancelled with ctx (it still times out).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.renewEvery)
	defer cancel()
	sent := time.Now()
	var err error
	if rev == 0 {
		data, _ := json.Marshal(l)
		rev, err = g.kv.Create(cctx, ShardKey(shard), data, jetstream.KeyTTL(g.cfg.LeaseTTL))
	} else {
		rev, err = g.write(cctx, ShardKey(shard), l, rev, true)
	}
	if err != nil {
		// A lost race: the key exists, or it changed between Create's
		// attempts (its second attempt reports the raw wrong-last-sequence).
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
			return false
		}
		// No answer (a timeout, a lost connection): the write may have
		// been stored all the same.
		if rev = g.landed(context.WithoutCancel(ctx), shard); rev == 0 {
			if ctx.Err() == nil {
				g.log.Warn("claiming a shard failed", LogShard, shard, "err", err)
			}
			return false
		}
	}
	l.Epoch = rev
	g.mu.Lock()
	if g.closing || ctx.Err() != nil {
		g.mu.Unlock()
		g.giveBack(context.WithoutCancel(ctx), shard, rev)
		return false
	}
	defer g.mu.Unlock()
	k := &keeper{g: g, shard: shard, lease: l, rev: rev, lastOK: sent, wake: make(chan struct{}, 1)}
	g.held[shard] = k
	g.keepers.Add(1)
	go k.run()
	g.log.Info("shard acquired", LogShard, shard, "epoch", rev, "owned", g.countLocked())
	return true
}

// landed returns the revision of shard's lease if it is this process's
// (its write was stored though its answer was lost), else 0.
func (g *Group) landed(ctx context.Context, shard int) uint64 {
	ctx, cancel := context.WithTimeout(ctx, g.renewEvery)
	defer cancel()
	e, err := g.kv.Get(ctx, ShardKey(shard))
	if err != nil || !g.mine(e) {
		return 0
	}
	return e.Revision()
}

// mine reports whether e is a lease of this process.
func (g *Group) mine(e jetstream.KeyValueEntry) bool {
	var l Lease
	return json.Unmarshal(e.Value(), &l) == nil && l.Owner == g.cfg.InstanceID && l.Token == g.token
}

// giveBack deletes shard's lease, written by this process at rev, retrying
// for up to a lease TTL (after which it is gone anyway). When the key has
// another revision and is still this process's lease (a renewal that was
// stored though its answer was lost), it deletes that revision; when it
// is another's or gone, there is nothing to give back.
func (g *Group) giveBack(ctx context.Context, shard int, rev uint64) {
	deadline := time.Now().Add(g.cfg.LeaseTTL)
	for {
		dctx, cancel := context.WithTimeout(ctx, g.renewEvery)
		err := g.kv.Delete(dctx, ShardKey(shard), jetstream.LastRevision(rev))
		cancel()
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
			cur := g.landed(ctx, shard)
			if cur == 0 || cur == rev {
				return
			}
			rev = cur
			continue
		}
		if err == nil || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(g.renewEvery / 2):
		}
	}
}

func (g *Group) countLocked() int {
	n := 0
	for _, k := range g.held {
		if !k.releasing() {
			n++
		}
	}
	return n
}

// dropped removes a keeper that ended.
func (g *Group) dropped(k *keeper) {
	g.mu.Lock()
	if g.held[k.shard] == k {
		delete(g.held, k.shard)
	}
	g.mu.Unlock()
	g.poke()
}

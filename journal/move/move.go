package move

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// Config says what to move where. Flags a command line takes write
// straight into it.
type Config struct {
	// From is the journal stream whose commands move. If empty,
	// wire.JournalStream.
	From string
	// To is the new stream's name; required, and not From.
	To string
	// AllowTrim and AllowMsgDelete are the new journal's deny flags, as
	// journal.Config has them: with neither, it denies deletes and purges.
	// The old journal's flags are not carried over: changing them is what
	// a move is for.
	AllowTrim, AllowMsgDelete bool
	// Apply creates the copy and waits until it has every command the
	// journal held when Run began, then verifies that much. If false, Run
	// is a dry run: it reads both streams and says what it would do.
	Apply bool
	// Cutover, with Apply, makes the copy the journal: the old stream stops
	// taking commands, the copy catches up, both are verified whole, and the
	// copy takes the journal's subjects, configuration and consumers.
	// Writers, projectors and readers must then use the name To.
	Cutover bool
	// DeleteSource, with Cutover, deletes the old stream once the copy is
	// the journal and verified (for erasure: the old stream still holds
	// every command).
	DeleteSource bool
	// Progress, if set, is called while Run waits for the copy, with the
	// copy's last sequence and the one it waits for.
	Progress func(copied, total uint64)
	// Poll is how often the copy's position is read while waiting. If
	// zero, 100ms.
	Poll time.Duration
}

func (c *Config) setDefaults() {
	if c.From == "" {
		c.From = wire.JournalStream
	}
	if c.Poll == 0 {
		c.Poll = 100 * time.Millisecond
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	from := c.From
	if from == "" {
		from = wire.JournalStream
	}
	if err := (journal.Config{Stream: from}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("from: %w", err))
	}
	switch {
	case c.To == "":
		errs = append(errs, errors.New("to: the new stream's name is required"))
	case c.To == from:
		errs = append(errs, fmt.Errorf("to: %q is the journal being moved; name a new stream", c.To))
	default:
		if err := (journal.Config{Stream: c.To}).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("to: %w", err))
		}
	}
	if c.Cutover && !c.Apply {
		errs = append(errs, errors.New("cutover needs apply"))
	}
	if c.DeleteSource && !c.Cutover {
		errs = append(errs, errors.New("deleting the old stream needs cutover"))
	}
	if c.Poll < 0 {
		errs = append(errs, fmt.Errorf("poll %s: must not be negative", c.Poll))
	}
	return errors.Join(errs...)
}

// Run moves the journal cfg.From into the stream cfg.To as cfg says, and
// reports what it found and did. Run again after an interruption, it goes
// on from where the move is; run after a finished move, it reports it.
func Run(ctx context.Context, js jetstream.JetStream, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, fmt.Errorf("move config: %w", err)
	}
	cfg.setDefaults()
	m := &mover{js: js, cfg: cfg, r: Report{From: cfg.From, To: cfg.To, State: StateDryRun}}
	err := m.run(ctx)
	return m.r, err
}

// mover is one Run.
type mover struct {
	js  jetstream.JetStream
	cfg Config
	r   Report

	src, tgt jetstream.Stream
	srcInfo  *jetstream.StreamInfo
}

func (m *mover) run(ctx context.Context) error {
	promoted, err := m.openTarget(ctx)
	if err != nil {
		return err
	}
	if promoted {
		return m.finished(ctx)
	}
	if _, err := journal.Open(ctx, m.js, m.cfg.From); err != nil {
		return err
	}
	if m.src, err = m.js.Stream(ctx, m.cfg.From); err != nil {
		return fmt.Errorf("open stream %s: %w", m.cfg.From, err)
	}
	if err := m.readSource(ctx); err != nil {
		return err
	}
	if !m.cfg.Apply {
		return nil
	}
	if m.tgt == nil {
		if err := m.createCopy(ctx); err != nil {
			return err
		}
	}
	m.r.State = StateCopying
	if !m.cfg.Cutover {
		last, err := m.lastStored(ctx)
		if err != nil {
			return err
		}
		if err := m.waitCopy(ctx, last); err != nil {
			return err
		}
		m.r.State = StateCopied
		return m.verify(ctx, last)
	}
	return m.cutover(ctx)
}

// openTarget opens the stream cfg.To if it exists: a copy under way (a
// mirror of From made by a move) or a finished move (promoted, true).
// Another stream of that name is ErrTargetExists.
func (m *mover) openTarget(ctx context.Context) (promoted bool, err error) {
	s, err := m.js.Stream(ctx, m.cfg.To)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open stream %s: %w", m.cfg.To, err)
	}
	c := s.CachedInfo().Config
	if c.Metadata[wire.MetadataMovedFrom] != m.cfg.From {
		return false, fmt.Errorf("%w: stream %s (choose another name, or delete it if it is a leftover)", ErrTargetExists, m.cfg.To)
	}
	m.tgt = s
	// Between the end of the mirror and the last step of the cutover the
	// copy takes only fillers: a cutover under way.
	return c.Mirror == nil && !slices.Contains(c.Subjects, fillerSubject(m.cfg.To)), nil
}

// readSource reads the journal's figures into the report.
func (m *mover) readSource(ctx context.Context) error {
	info, err := m.src.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", m.cfg.From, err)
	}
	m.srcInfo = info
	m.r.Shards = info.Config.Metadata[wire.MetadataShards]
	m.r.Source = figuresOf(info.State)
	if m.tgt != nil {
		ti, err := m.tgt.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", m.cfg.To, err)
		}
		m.r.Target = figuresOf(ti.State)
	}
	m.r.Retired = info.Config.Metadata[wire.MetadataMovedTo] == m.cfg.To
	return nil
}

// mirrorConfig is the copy while it copies: a mirror of the journal, with
// no subjects of its own, so it overlaps nothing the journal takes.
func (m *mover) mirrorConfig() jetstream.StreamConfig {
	sc := m.srcInfo.Config
	return jetstream.StreamConfig{
		Name:        m.cfg.To,
		Description: fmt.Sprintf("tablejournal journal %s being moved here (replay move); not yet the journal", m.cfg.From),
		Storage:     sc.Storage,
		Replicas:    sc.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Mirror:      &jetstream.StreamSource{Name: m.cfg.From},
		Metadata:    map[string]string{wire.MetadataMovedFrom: m.cfg.From},
	}
}

func (m *mover) createCopy(ctx context.Context) error {
	s, err := m.js.CreateStream(ctx, m.mirrorConfig())
	if err != nil {
		return fmt.Errorf("create stream %s: %w", m.cfg.To, err)
	}
	// JetStream makes a mirror answer the direct gets of a journal that
	// allows them once it is about caught up, which would let a reader of
	// the journal see the copy's lag: turn that off.
	if c := s.CachedInfo().Config; c.MirrorDirect {
		c.MirrorDirect = false
		if s, err = m.js.UpdateStream(ctx, c); err != nil {
			return fmt.Errorf("stream %s: turn off mirror direct gets: %w", m.cfg.To, err)
		}
	}
	m.tgt, m.r.Created = s, true
	return nil
}

// lastStored is the sequence of the journal's last stored message (0 if
// none): the copy has caught up when it holds it. The journal's last
// sequence may be later, when its last messages were deleted. It is read
// by the stream's leader, not by a direct get: JetStream lets a mirror
// answer its origin's direct gets, and the copy may lag.
func (m *mover) lastStored(ctx context.Context) (uint64, error) {
	info, err := m.src.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", m.cfg.From, err)
	}
	if info.State.Msgs == 0 {
		return 0, nil
	}
	return lastSeqOf(ctx, m.js, m.cfg.From)
}

// waitCopy waits, within ctx, until the copy holds sequence last.
func (m *mover) waitCopy(ctx context.Context, last uint64) error {
	tick := time.NewTicker(m.cfg.Poll)
	defer tick.Stop()
	for {
		info, err := m.tgt.Info(ctx)
		if err != nil {
			return fmt.Errorf("stream %s: %w", m.cfg.To, err)
		}
		m.r.Target = figuresOf(info.State)
		if m.cfg.Progress != nil {
			m.cfg.Progress(info.State.LastSeq, last)
		}
		if info.State.LastSeq >= last {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("copy %s to %s: at sequence %d of %d: %w", m.cfg.From, m.cfg.To, info.State.LastSeq, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// verify compares the journal and the copy up to sequence last.
func (m *mover) verify(ctx context.Context, last uint64) error {
	a, err := digestStream(ctx, m.js, m.cfg.From, last)
	if err != nil {
		return err
	}
	b, err := digestStream(ctx, m.js, m.cfg.To, last)
	if err != nil {
		return err
	}
	m.r.Verified = &Verification{UpTo: last, Source: a, Target: b, Equal: a == b && a.LastSeq == last}
	if !m.r.Verified.Equal {
		return fmt.Errorf("%w: up to sequence %d, %s has %s, %s has %s", ErrMismatch, last, m.cfg.From, a, m.cfg.To, b)
	}
	return nil
}

// cutover freezes the journal, lets the copy catch up, verifies it whole
// and makes it the journal.
func (m *mover) cutover(ctx context.Context) error {
	if err := m.checkIdle(ctx); err != nil {
		return err
	}
	if err := m.retireSource(ctx); err != nil {
		return err
	}
	if err := m.promote(ctx); err != nil {
		if m.tgt.CachedInfo().Config.Mirror == nil {
			// The copy no longer follows the journal: a run again
			// finishes the cutover.
			return err
		}
		// The journal takes commands again; the copy goes on mirroring.
		if rerr := m.restoreSource(context.WithoutCancel(ctx)); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return m.finished(ctx)
}

// checkIdle refuses while a client pulls from, or is bound to, one of the
// journal's durable consumers: a projector running against it.
func (m *mover) checkIdle(ctx context.Context) error {
	var busy []string
	l := m.src.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Config.Durable != "" && (ci.NumWaiting > 0 || ci.PushBound) {
			busy = append(busy, ci.Name)
		}
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("consumers of %s: %w", m.cfg.From, err)
	}
	if len(busy) > 0 {
		return fmt.Errorf("%w: consumers %s of %s are being read; stop the projectors first", ErrProjectorRunning, strings.Join(busy, ", "), m.cfg.From)
	}
	return nil
}

// retiredSubject is what the journal listens on once its commands moved:
// a subject no client publishes to, so that commands reach the copy only.
func retiredSubject(stream string) string { return "tablejournal-moved." + stream + ".>" }

// retireSource makes the journal stop taking commands: it gives up the
// journal's subjects (a writer's publish meanwhile gets no answer and is
// retried) and records where its commands went.
func (m *mover) retireSource(ctx context.Context) error {
	if m.r.Retired {
		return nil
	}
	c := m.srcInfo.Config
	c.Subjects = []string{retiredSubject(m.cfg.From)}
	c.Metadata = maps.Clone(c.Metadata)
	c.Metadata[wire.MetadataMovedTo] = m.cfg.To
	if _, err := m.js.UpdateStream(ctx, c); err != nil {
		return fmt.Errorf("stop %s taking commands: %w", m.cfg.From, err)
	}
	m.r.Retired = true
	return nil
}

// restoreSource undoes retireSource after a failed cutover.
func (m *mover) restoreSource(ctx context.Context) error {
	info, err := m.src.Info(ctx)
	if err != nil {
		return fmt.Errorf("restore %s: %w", m.cfg.From, err)
	}
	c := info.Config
	if c.Metadata[wire.MetadataMovedTo] != m.cfg.To {
		return nil
	}
	c.Subjects = wire.JournalSubjects()
	c.Metadata = maps.Clone(c.Metadata)
	delete(c.Metadata, wire.MetadataMovedTo)
	if _, err := m.js.UpdateStream(ctx, c); err != nil {
		return fmt.Errorf("restore %s taking commands: %w", m.cfg.From, err)
	}
	m.r.Retired = false
	return nil
}

// lastSeqOf asks the leader of stream, which holds messages, for its last
// stored message's sequence through the JetStream API's message get, which, unlike a direct
// get, a mirror never answers.
func lastSeqOf(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	var last uint64
	// The commands, and the table layout settings the journal carries
	// beside them: a setting may be its last message.
	for _, subj := range []string{wire.JournalPrefix + ".>", wire.LayoutSubjects} {
		req, _ := json.Marshal(map[string]string{"last_by_subj": subj})
		msg, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
		if err != nil {
			return 0, fmt.Errorf("stream %s last message: %w", stream, err)
		}
		var resp struct {
			Message *struct {
				Seq uint64 `json:"seq"`
			} `json:"message"`
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return 0, fmt.Errorf("stream %s last message: %w", stream, err)
		}
		switch {
		case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
			continue
		case resp.Error != nil:
			return 0, fmt.Errorf("stream %s last message: %w", stream, resp.Error)
		case resp.Message == nil:
			return 0, fmt.Errorf("stream %s last message: empty answer", stream)
		}
		last = max(last, resp.Message.Seq)
	}
	if last == 0 {
		return 0, fmt.Errorf("stream %s last message: none found", stream)
	}
	return last, nil
}

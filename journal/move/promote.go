package move

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// fillerSubject is where the copy takes the fillers that keep the
// journal's trailing gap (promote); nothing else publishes there.
func fillerSubject(stream string) string { return "tablejournal-move." + stream + ".filler" }

// promote makes the frozen journal's copy the journal: it waits until the
// copy holds every command, verifies it, ends the mirror, fills a trailing
// gap, then takes the journal's subjects and configuration.
func (m *mover) promote(ctx context.Context) error {
	info, err := m.src.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", m.cfg.From, err)
	}
	m.srcInfo, m.r.Source = info, figuresOf(info.State)
	last, err := m.lastStored(ctx)
	if err != nil {
		return err
	}
	if err := m.waitCopy(ctx, last); err != nil {
		return err
	}
	if err := m.verify(ctx, last); err != nil {
		return err
	}
	// A mirror stops at the journal's last stored message: sequences after
	// it that were deleted would be given to the next commands. Until
	// then, the copy takes only fillers, one per such sequence, each
	// published where the last one is expected; then they are purged.
	if c := m.tgt.CachedInfo().Config; c.Mirror != nil {
		c.Mirror = nil
		c.Subjects = []string{fillerSubject(m.cfg.To)}
		c.Duplicates = 0
		if m.tgt, err = m.js.UpdateStream(ctx, c); err != nil {
			return fmt.Errorf("end the mirror of %s into %s: %w", m.cfg.From, m.cfg.To, err)
		}
	}
	ti, err := m.tgt.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", m.cfg.To, err)
	}
	for seq := ti.State.LastSeq; seq < info.State.LastSeq; seq++ {
		if _, err := m.js.PublishMsg(ctx, &nats.Msg{Subject: fillerSubject(m.cfg.To)},
			jetstream.WithExpectLastSequence(seq), jetstream.WithExpectStream(m.cfg.To)); err != nil {
			return fmt.Errorf("keep gap at sequence %d of %s: %w", seq+1, m.cfg.To, err)
		}
	}
	if err := m.tgt.Purge(ctx, jetstream.WithPurgeSubject(fillerSubject(m.cfg.To))); err != nil {
		return fmt.Errorf("keep gaps at the end of %s: %w", m.cfg.To, err)
	}
	if m.tgt, err = m.js.UpdateStream(ctx, m.journalConfig()); err != nil {
		return fmt.Errorf("make %s the journal: %w", m.cfg.To, err)
	}
	return nil
}

// journalConfig is the journal's configuration under the new name, with
// the deny flags and metadata the move asks for.
func (m *mover) journalConfig() jetstream.StreamConfig {
	c := m.srcInfo.Config
	c.Name = m.cfg.To
	c.Subjects = wire.JournalSubjects()
	c.FirstSeq = m.tgt.CachedInfo().Config.FirstSeq
	c.Mirror, c.Sources = nil, nil
	c.DenyDelete = !m.cfg.AllowTrim && !m.cfg.AllowMsgDelete
	c.DenyPurge = !m.cfg.AllowTrim
	meta := make(map[string]string)
	for k, v := range c.Metadata {
		if strings.HasPrefix(k, "tablejournal.") {
			meta[k] = v
		}
	}
	delete(meta, wire.MetadataAllowTrim)
	delete(meta, wire.MetadataAllowMsgDelete)
	delete(meta, wire.MetadataMovedTo)
	if m.cfg.AllowTrim {
		meta[wire.MetadataAllowTrim] = "true"
	}
	if m.cfg.AllowMsgDelete {
		meta[wire.MetadataAllowMsgDelete] = "true"
	}
	meta[wire.MetadataMovedFrom] = m.cfg.From
	c.Metadata = meta
	return c
}

// finished completes a move whose copy is the journal: it checks the two
// streams agree (while the old one is there), carries the old journal's
// durable consumers over at their acknowledged floors, and deletes the old
// stream if asked. Every step may run again.
func (m *mover) finished(ctx context.Context) error {
	m.r.State = StateMoved
	ti, err := m.tgt.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", m.cfg.To, err)
	}
	m.r.Target = figuresOf(ti.State)
	m.r.Shards = ti.Config.Metadata[wire.MetadataShards]
	src, err := m.js.Stream(ctx, m.cfg.From)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		m.r.SourceDeleted = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("open stream %s: %w", m.cfg.From, err)
	}
	m.src = src
	si, err := src.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", m.cfg.From, err)
	}
	m.r.Source, m.r.Retired = figuresOf(si.State), true
	if m.r.Source.FirstSeq != m.r.Target.FirstSeq || m.r.Source.LastSeq > m.r.Target.LastSeq {
		return fmt.Errorf("%w: %s holds sequences %d to %d, %s %d to %d", ErrMismatch,
			m.cfg.From, m.r.Source.FirstSeq, m.r.Source.LastSeq, m.cfg.To, m.r.Target.FirstSeq, m.r.Target.LastSeq)
	}
	if m.r.Verified == nil {
		last, err := m.lastStored(ctx)
		if err != nil {
			return err
		}
		if err := m.verify(ctx, last); err != nil {
			return err
		}
	}
	if err := m.copyConsumers(ctx); err != nil {
		return err
	}
	if !m.cfg.DeleteSource {
		return nil
	}
	if err := m.js.DeleteStream(ctx, m.cfg.From); err != nil {
		return fmt.Errorf("delete stream %s: %w", m.cfg.From, err)
	}
	m.r.SourceDeleted = true
	return nil
}

// copyConsumers creates, on the new journal, each durable consumer of the
// old one that it lacks, starting after the old one's acknowledged floor:
// a projector pointed at the new journal resumes where it stopped. Their
// metadata (the lease epochs of the old journal's ownership bucket) stays
// behind: the new journal's projectors lease its shards afresh.
func (m *mover) copyConsumers(ctx context.Context) error {
	l := m.src.ListConsumers(ctx)
	var infos []*jetstream.ConsumerInfo
	for ci := range l.Info() {
		if ci.Config.Durable != "" {
			infos = append(infos, ci)
		}
	}
	if err := l.Err(); err != nil {
		return fmt.Errorf("consumers of %s: %w", m.cfg.From, err)
	}
	for _, ci := range infos {
		from := journal.AppliedOf(ci).Through + 1
		_, err := m.js.Consumer(ctx, m.cfg.To, ci.Name)
		if err == nil {
			m.r.Consumers = append(m.r.Consumers, ConsumerMove{Name: ci.Name, From: from})
			continue
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("consumer %s of %s: %w", ci.Name, m.cfg.To, err)
		}
		c := ci.Config
		c.Metadata = nil
		c.DeliverPolicy, c.OptStartSeq, c.OptStartTime = jetstream.DeliverAllPolicy, 0, nil
		if from > 1 {
			c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
		}
		if _, err := m.js.CreateConsumer(ctx, m.cfg.To, c); err != nil {
			return fmt.Errorf("carry consumer %s over to %s: %w", ci.Name, m.cfg.To, err)
		}
		m.r.Consumers = append(m.r.Consumers, ConsumerMove{Name: ci.Name, From: from})
	}
	return nil
}

package jsapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStreamConfig means an existing stream's configuration differs from
// the wanted one in a way JetStream cannot change in place;
// journal.ErrStreamConfig is this error.
var ErrStreamConfig = errors.New("stream configuration differs")

// DefaultDuplicates is the duplicate window of the streams tablejournal
// creates, unless configured otherwise.
const DefaultDuplicates = 2 * time.Minute

// EnsureOptions is what the ensure options of a stream owner's package
// (journal.EnsureOption) set.
type EnsureOptions struct {
	// Replicas is the replica count of a stream created, and the count an
	// existing one must have; zero accepts any.
	Replicas int
}

// Options applies opts.
func Options[O ~func(*EnsureOptions)](opts []O) EnsureOptions {
	var o EnsureOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Managed names the fields of an existing stream's configuration that
// EnsureStream brings to the wanted value; the others it leaves as they
// are, so that an operator's own settings survive a restart. The
// description and the deny flags are always Managed.
// Replicas are never changed here: see journal.CheckReplicas.
type Managed struct {
	Duplicates, MaxAge bool
	// Check, if set, vets an existing stream's configuration before
	// anything is changed; its error is returned as is.
	Check func(have jetstream.StreamConfig) error
}

// EnsureStream creates the stream want describes, or, if it exists, updates
// what differs from want among the Managed fields and JetStream allows to
// change in place, and returns a description of each change made (nil if
// none), for the caller to log: an existing stream's configuration is never
// changed silently. Deny-delete and deny-purge are turned on when want has
// them; a stream that has them while want does not cannot be changed (JetStream
// never lifts them), which is an error wrapping ErrStreamConfig.
func EnsureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, m Managed) (jetstream.Stream, []string, error) {
	s, err := js.CreateStream(ctx, want)
	if err == nil {
		return s, nil, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil, nil, fmt.Errorf("create stream %s: %w", want.Name, err)
	}
	if s, err = js.Stream(ctx, want.Name); err != nil {
		return nil, nil, fmt.Errorf("open stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	if m.Check != nil {
		if err := m.Check(have); err != nil {
			return nil, nil, err
		}
	}
	if have.DenyDelete && !want.DenyDelete || have.DenyPurge && !want.DenyPurge {
		return nil, nil, fmt.Errorf("%w: stream %s denies message deletes and purges, and JetStream cannot lift that; to trim, create a new stream under another name",
			ErrStreamConfig, want.Name)
	}
	upd := have
	var changes []string
	change := func(what string, from, to any) {
		changes = append(changes, fmt.Sprintf("%s %v → %v", what, from, to))
	}
	if have.Description != want.Description {
		upd.Description = want.Description
		change("description", fmt.Sprintf("%q", have.Description), fmt.Sprintf("%q", want.Description))
	}
	upd.Metadata = maps.Clone(have.Metadata) // have's map is the cached info's
	for k, v := range want.Metadata {
		if have.Metadata[k] != v {
			if upd.Metadata == nil {
				upd.Metadata = map[string]string{}
			}
			upd.Metadata[k] = v
			change("metadata "+k, fmt.Sprintf("%q", have.Metadata[k]), fmt.Sprintf("%q", v))
		}
	}
	for _, subj := range want.Subjects {
		if !slices.Contains(have.Subjects, subj) {
			// A subject the stream gains (the layout settings, issue 38):
			// what it carried stays.
			upd.Subjects = append(slices.Clone(upd.Subjects), subj)
			change("subjects", have.Subjects, upd.Subjects)
		}
	}
	if want.DenyDelete && !have.DenyDelete {
		upd.DenyDelete = true
		change("deny message deletes", false, true)
	}
	if want.DenyPurge && !have.DenyPurge {
		upd.DenyPurge = true
		change("deny purges", false, true)
	}
	if m.Duplicates && have.Duplicates != want.Duplicates {
		upd.Duplicates = want.Duplicates
		change("duplicate window", have.Duplicates, want.Duplicates)
	}
	if m.MaxAge && have.MaxAge != want.MaxAge {
		upd.MaxAge = want.MaxAge
		change("max age", age(have.MaxAge), age(want.MaxAge))
	}
	if changes == nil {
		return s, nil, nil
	}
	if s, err = js.UpdateStream(ctx, upd); err != nil {
		return nil, nil, fmt.Errorf("update stream %s (%v): %w", want.Name, changes, err)
	}
	return s, changes, nil
}

func age(d time.Duration) string {
	if d == 0 {
		return "unlimited"
	}
	return d.String()
}

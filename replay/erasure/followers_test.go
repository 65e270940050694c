package erasure_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay/erasure"
)

// TestAwaitFollowers: before the subject of a purged entry is purged, the
// erase waits until every consumer of the record's stream that takes the
// entry's subject was sent the purge marker. A follower that has not been (here: a consumer holding an
// unacknowledged message at its limit of one) holds the wait to its
// bound; once it was sent the marker, the wait ends at once.
func TestAwaitFollowers(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "followers"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_followers")
	if err != nil {
		t.Fatal(err)
	}
	follower, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "follower", MaxAckPending: 1,
		AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	// A consumer of another key is never sent b's marker, and waits for none.
	if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "other",
		FilterSubject: "$KV.followers.a", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	held, err := follower.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	var first jetstream.Msg
	for m := range held.Messages() {
		first = m
	}
	if first == nil {
		t.Fatal("the follower got nothing")
	}
	if _, err := kv.Put(ctx, "b", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "b"); err != nil {
		t.Fatal(err)
	}

	const bound = 300 * time.Millisecond
	start := time.Now()
	if err := erasure.AwaitFollowers(ctx, s, "$KV.followers.b", bound); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < bound {
		t.Errorf("the wait ended after %s, before its bound, with the follower not sent the marker", d)
	}

	// The follower acknowledges and is sent the rest, the marker with it.
	if err := first.Ack(); err != nil {
		t.Fatal(err)
	}
	rest, err := follower.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range rest.Messages() {
		_ = m.Ack()
	}
	start = time.Now()
	if err := erasure.AwaitFollowers(ctx, s, "$KV.followers.b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the wait took %s with every follower sent the marker", d)
	}
}

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		filter, subject string
		want            bool
	}{
		{"$KV.b.>", "$KV.b.x", true},
		{"$KV.b.>", "$KV.b.x.y", true},
		{"$KV.b.>", "$KV.b", false},
		{"$KV.b.x", "$KV.b.x", true},
		{"$KV.b.x", "$KV.b.y", false},
		{"$KV.b.x", "$KV.b.x.y", false},
		{"$KV.*.x", "$KV.b.x", true},
		{"$KV.*.x", "$KV.b.y", false},
		{"$KV.*", "$KV.b.x", false},
		{">", "a", true},
	}
	for _, tt := range tests {
		if got := erasure.SubjectMatches(tt.filter, tt.subject); got != tt.want {
			t.Errorf("filter %q, subject %q: %v, want %v", tt.filter, tt.subject, got, tt.want)
		}
	}
}

package journaltest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamsHolding lists "stream:seq" of every message of every stream of js
// whose body or headers hold secret, read back byte for byte.
func StreamsHolding(t testing.TB, ctx context.Context, js jetstream.JetStream, secret []byte) []string {
	t.Helper()
	var found []string
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			continue
		}
		cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		it, err := cons.Messages()
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			meta, _ := m.Metadata()
			hit := bytes.Contains(m.Data(), secret)
			for _, vs := range m.Headers() {
				for _, v := range vs {
					hit = hit || bytes.Contains([]byte(v), secret)
				}
			}
			if hit {
				found = append(found, fmt.Sprintf("%s:%d", name, meta.Sequence.Stream))
			}
			if meta.NumPending == 0 {
				break
			}
		}
		it.Stop()
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}

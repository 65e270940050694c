package tablejournal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
)

// BenchmarkReadYourWrite: publish an upsert and read it back with
// AfterSeq, one after the other, on the embedded store (the latency a
// request that writes then reads sees).
func BenchmarkReadYourWrite(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := tj.Connect(ctx, natsURL, tj.WithStore(tableStore))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pk := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	for i := 0; b.Loop(); i++ {
		pos, err := c.Publish(ctx, tj.NewCommand("bench", pk).Upsert("r", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			b.Fatal(err)
		}
		r, err := c.Get(ctx, "bench", pk, "r", tj.AfterSeq(pos.Seq))
		if err != nil || r.Seq != pos.Seq {
			b.Fatalf("read %+v: %v", r, err)
		}
	}
}

// BenchmarkApply: publish and wait for the outcome.
func BenchmarkApply(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := tj.Connect(ctx, natsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pk := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	for i := 0; b.Loop(); i++ {
		if _, err := c.Apply(ctx, tj.NewCommand("bench", pk).Upsert("r", tj.Entity{"i": tj.Int64(int64(i))})); err != nil {
			b.Fatal(err)
		}
	}
}

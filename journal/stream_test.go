package journal_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// publishRaw publishes body the way a client in any language would: a plain
// NATS request to journal.<table>.<pk-token>, answered by JetStream's ack.
func publishRaw(t *testing.T, e *env, subject, id string, body []byte) uint64 {
	t.Helper()
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	msg.Header.Set("Content-Type", "application/json")
	msg.Header.Set("Nats-Msg-Id", id)
	resp, err := e.nc.RequestMsgWithContext(e.ctx, msg)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	var ack struct {
		Seq   uint64 `json:"seq"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil || ack.Error != nil || ack.Seq == 0 {
		t.Fatalf("publish %s: ack %s (%v)", subject, resp.Data, err)
	}
	return ack.Seq
}

func TestRawPublishIsStoredUnderItsShard(t *testing.T) {
	const shards = 8
	e := newEnv(t, journal.Config{Shards: shards})

	seq := publishRaw(t, e, "journal.orders."+wire.PKToken("customer-42"), "c-1", rawJSON("c-1", "orders", "customer-42"))
	m, err := e.j.Get(e.ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	table, shard, pk, err := wire.ParseJournalSubject(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("journal.orders.%d.%s", shard, wire.PKToken("customer-42"))
	if m.Subject != want || table != "orders" || pk != "customer-42" || shard < 0 || shard >= shards {
		t.Fatalf("stored subject %q = (%q, %d, %q), want %s with shard < %d", m.Subject, table, shard, pk, want, shards)
	}
	cmd, err := journal.DecodeMsg(m)
	if err != nil {
		t.Fatalf("DecodeMsg: %v", err)
	}
	if cmd.ID != "c-1" || cmd.Table != "orders" || cmd.PK != "customer-42" {
		t.Fatalf("decoded %+v", cmd)
	}
}

func TestShardingKeepsPartitionsTogetherAndSpreadsThem(t *testing.T) {
	const shards = 8
	e := newEnv(t, journal.Config{Shards: shards})

	// Many commands of one partition: one shard.
	for i := range 20 {
		id := fmt.Sprintf("same-%d", i)
		publishRaw(t, e, wire.JournalSubject("orders", "customer-7"), id, rawJSON(id, "orders", "customer-7"))
	}
	// One command in each of many partitions: every shard.
	const partitions = 200
	for i := range partitions {
		id, pk := fmt.Sprintf("spread-%d", i), fmt.Sprintf("customer-%d", 1000+i)
		publishRaw(t, e, wire.JournalSubject("orders", pk), id, rawJSON(id, "orders", pk))
	}

	shardOf := map[string]map[int]bool{} // pk -> shards seen
	perShard := map[int]int{}
	err := e.j.Read(e.ctx, 0, 0, "", func(m journal.Msg) error {
		_, shard, pk, err := wire.ParseJournalSubject(m.Subject)
		if err != nil {
			return err
		}
		if shardOf[pk] == nil {
			shardOf[pk] = map[int]bool{}
		}
		shardOf[pk][shard] = true
		perShard[shard]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(shardOf["customer-7"]) != 1 {
		t.Errorf("one partition spread over shards %v", shardOf["customer-7"])
	}
	if len(perShard) != shards {
		t.Errorf("%d partitions used shards %v, want all %d", partitions+1, perShard, shards)
	}
	for s := range perShard {
		if s < 0 || s >= shards {
			t.Errorf("shard %d out of range", s)
		}
	}

	// A shard filter selects exactly that shard's messages.
	total := 0
	for s := range shards {
		n := 0
		if err := e.j.Read(e.ctx, 0, 0, wire.ShardFilter(s), func(m journal.Msg) error {
			_, shard, _, _ := wire.ParseJournalSubject(m.Subject)
			if shard != s {
				t.Errorf("ShardFilter(%d) read %s", s, m.Subject)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != perShard[s] {
			t.Errorf("ShardFilter(%d) read %d messages, want %d", s, n, perShard[s])
		}
		total += n
	}
	if total != 20+partitions {
		t.Errorf("shards hold %d messages, want %d", total, 20+partitions)
	}
}

func TestEnsureRefusesAnotherShardCount(t *testing.T) {
	e := newEnv(t, journal.Config{Shards: 16})
	if e.j.Shards() != 16 || e.j.Name() != wire.JournalStream {
		t.Fatalf("journal %s with %d shards", e.j.Name(), e.j.Shards())
	}

	_, err := journal.Ensure(e.ctx, e.js, journal.Config{Shards: 8})
	if !errors.Is(err, journal.ErrShardMismatch) {
		t.Fatalf("Ensure with 8 shards over 16: %v, want ErrShardMismatch", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "16") || !strings.Contains(msg, "8") {
		t.Errorf("error %q does not name both shard counts", msg)
	}

	// The same config again is fine, and Open reads the count back.
	if _, err := journal.Ensure(e.ctx, e.js, journal.Config{}); err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	j, err := journal.Open(e.ctx, e.js, "")
	if err != nil {
		t.Fatal(err)
	}
	if j.Shards() != 16 {
		t.Fatalf("Open: %d shards, want 16", j.Shards())
	}
}

func TestOpenRefusesAStreamThatIsNoJournal(t *testing.T) {
	e := newEnv(t, journal.Config{})
	if _, err := e.js.CreateStream(e.ctx, streamConfig("OTHER", "other.>")); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(e.ctx, e.js, "OTHER"); !errors.Is(err, journal.ErrNotJournal) {
		t.Fatalf("Open(OTHER) = %v, want ErrNotJournal", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (journal.Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	err := journal.Config{Stream: "a.b", Shards: -1, Duplicates: -1, Replicas: 9}.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, want := range []string{"stream name", "shards", "duplicates", "replicas"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %s", err, want)
		}
	}
}

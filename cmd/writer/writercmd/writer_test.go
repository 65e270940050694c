package writercmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// unreachableNATS is a URL nothing listens on (clitest.UnreachableNATS).
const unreachableNATS = clitest.UnreachableNATS

// writerEnv is a real in-process JetStream server with the journal, and
// optionally a real projector over the embedded sqlite store.
type writerEnv struct {
	url string
	js  jetstream.JetStream
	j   *journal.Journal
}

func startWriterEnv(t *testing.T, withProjector bool) *writerEnv {
	t.Helper()
	ctx := journaltest.Context(t, time.Minute)
	cfg := journal.Config{Shards: 2}
	if withProjector {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		h := projectiontest.Start(t, st, projectiontest.Options{Journal: cfg})
		h.StartProjector(projection.Config{Journal: cfg, NoChangeFeed: true})
		return &writerEnv{url: h.Server.ClientURL(), js: h.JS, j: h.Journal}
	}
	// Only a server and the journal: the tests of a missing OUTCOMES
	// stream need no pipeline.
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	j, err := journal.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &writerEnv{url: srv.ClientURL(), js: js, j: j}
}

// runWriter runs the writer command with args and returns its output and
// exit code.
func runWriter(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(journaltest.Context(t, time.Minute), Run, args, cli.IO{})
}

// run runs the writer against e's server.
func (e *writerEnv) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWriter(t, append(args, "--nats", e.url)...)
}

// command reads back and decodes the command stored at seq.
func (e *writerEnv) command(t *testing.T, seq uint64) (*events.Command, journal.Msg) {
	t.Helper()
	m, err := e.j.Get(journaltest.Context(t, 10*time.Second), seq)
	if err != nil {
		t.Fatalf("get seq %d: %v", seq, err)
	}
	cmd, err := journal.DecodeMsg(m)
	if err != nil {
		t.Fatalf("decode seq %d: %v", seq, err)
	}
	return cmd, m
}

// jsonLines decodes stdout of --json into one map per line, and into the
// typed results.
func jsonResults(t *testing.T, stdout string) []writeResult {
	t.Helper()
	var rs []writeResult
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var r writeResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func oneResult(t *testing.T, stdout, stderr string) writeResult {
	t.Helper()
	rs := jsonResults(t, stdout)
	if len(rs) != 1 {
		t.Fatalf("want one JSON object on stdout, got %q (stderr %q)", stdout, stderr)
	}
	return rs[0]
}

func TestWriterOps(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	blob := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 1000)
	blobPath := filepath.Join(t.TempDir(), "blob.bin")
	if err := os.WriteFile(blobPath, blob, 0o600); err != nil {
		t.Fatal(err)
	}
	guid, _ := edm.Guid("0f8fad5b-d9cb-469f-a165-70867728950e")
	v := func(n int64) *int64 { return &n }
	key := []string{"--table", "orders", "--pk", "customer-42", "--rk", "order-7"}

	tests := []struct {
		name string
		args []string
		want events.Command // ID empty: a generated one is expected
		ct   string
	}{
		{
			name: "upsert every EDM type",
			args: append([]string{"upsert", "--id", "cmd-all.types:1", "--encoding", "json",
				"--issuer", "billing-svc", "--meta", "correlationId=c-991", "--meta", "note=a=b",
				"--set", "status=shipped",
				"--set", "raw:string=x:y=z",
				"--set", "paid:bool=true",
				"--set", "qty:int32=-7",
				"--set", "lines:int=3",
				"--set", "big:int64=9007199254740993",
				"--set", "total:double=12.5",
				"--set", "whole:double=12",
				"--set", "nan:double=NaN",
				"--set", "negzero:double=-0",
				"--set", "shipped:datetime=2026-11-21T10:00:00.1234567Z",
				"--set", "ref:guid={0F8FAD5B-D9CB-469F-A165-70867728950E}",
				"--set", "small:binary=AAEC/w==",
				"--set", "blob:binary=@" + blobPath,
			}, key...),
			want: events.Command{ID: "cmd-all.types:1", Table: "orders", PK: "customer-42",
				Issuer: "billing-svc", Meta: map[string]string{"correlationId": "c-991", "note": "a=b"},
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "order-7", Entity: edm.Entity{
					"status":  edm.String("shipped"),
					"raw":     edm.String("x:y=z"),
					"paid":    edm.Bool(true),
					"qty":     edm.Int32(-7),
					"lines":   edm.Int32(3),
					"big":     edm.Int64(9007199254740993),
					"total":   edm.Double(12.5),
					"whole":   edm.Double(12),
					"nan":     edm.Double(math.NaN()),
					"negzero": edm.Double(math.Copysign(0, -1)),
					"shipped": edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)),
					"ref":     guid,
					"small":   edm.Binary([]byte{0, 1, 2, 0xff}),
					"blob":    edm.Binary(blob),
				}}}},
			ct: wire.ContentTypeJSON,
		},
		{
			name: "insert with a generated id",
			args: append([]string{"insert", "--set", "n:Edm.Int64=5"}, key...),
			want: events.Command{Table: "orders", PK: "customer-42",
				Ops: []events.RowOp{{Op: events.OpInsert, RK: "order-7", Entity: edm.Entity{"n": edm.Int64(5)}}}},
		},
		{
			name: "replace if version",
			args: append([]string{"replace", "--id", "c-replace", "--if-version", "2", "--set", "a=b"}, key...),
			want: events.Command{ID: "c-replace", Table: "orders", PK: "customer-42",
				Ops: []events.RowOp{{Op: events.OpReplace, RK: "order-7", IfVersion: v(2), Entity: edm.Entity{"a": edm.String("b")}}}},
		},
		{
			name: "merge",
			args: append([]string{"merge", "--id", "c-merge", "--set", "flag:bool=false"}, key...),
			want: events.Command{ID: "c-merge", Table: "orders", PK: "customer-42",
				Ops: []events.RowOp{{Op: events.OpMerge, RK: "order-7", Entity: edm.Entity{"flag": edm.Bool(false)}}}},
		},
		{
			name: "upsert-merge without properties",
			args: append([]string{"upsert-merge", "--id", "c-um"}, key...),
			want: events.Command{ID: "c-um", Table: "orders", PK: "customer-42",
				Ops: []events.RowOp{{Op: events.OpUpsertMerge, RK: "order-7", Entity: edm.Entity{}}}},
		},
		{
			name: "upsertMerge by its wire name, empty row key",
			args: []string{"upsertMerge", "--id", "c-um2", "--table", "orders", "--pk", "p x:ü", "--rk", "", "--set", "a=1"},
			want: events.Command{ID: "c-um2", Table: "orders", PK: "p x:ü",
				Ops: []events.RowOp{{Op: events.OpUpsertMerge, RK: "", Entity: edm.Entity{"a": edm.String("1")}}}},
		},
		{
			name: "delete if version 0",
			args: append([]string{"delete", "--id", "c-del", "--if-version", "0"}, key...),
			want: events.Command{ID: "c-del", Table: "orders", PK: "customer-42",
				Ops: []events.RowOp{{Op: events.OpDelete, RK: "order-7", IfVersion: v(0)}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			stdout, stderr, code := e.run(t, append(tt.args, "--json")...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			r := oneResult(t, stdout, stderr)
			if r.Seq == 0 || r.Duplicate || r.Outcome != nil {
				t.Fatalf("result %+v", r)
			}
			got, m := e.command(t, r.Seq)
			want := tt.want
			if want.ID == "" {
				id, err := uuid.Parse(r.ID)
				if err != nil || id.Version() != 7 {
					t.Fatalf("generated id %q: want a UUIDv7 (%v)", r.ID, err)
				}
				want.ID = r.ID
			}
			if got.IssuedAt.Before(before.Add(-time.Millisecond)) || got.IssuedAt.After(time.Now()) {
				t.Errorf("issuedAt %s, want the time of the call", got.IssuedAt)
			}
			want.IssuedAt = got.IssuedAt
			if r.ID != want.ID || !got.Equal(&want) {
				t.Errorf("stored command\n got %s %+v\nwant %s %+v", r.ID, *got, want.ID, want)
				for name, v := range got.Ops[0].Entity {
					if w := want.Ops[0].Entity[name]; !v.Equal(w) {
						t.Errorf("property %s: got %#v, want %#v", name, v, w)
					}
				}
			}
			ct := tt.ct
			if ct == "" {
				ct = wire.ContentTypeMsgpack
			}
			if h := m.Header.Get(wire.HeaderContentType); h != ct {
				t.Errorf("Content-Type %q, want %q", h, ct)
			}
		})
	}

	t.Run("text output", func(t *testing.T) {
		stdout, stderr, code := e.run(t, append([]string{"upsert", "--id", "c-text", "--set", "a=b"}, key...)...)
		if code != cli.ExitOK {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var seq uint64
		if _, err := fmt.Sscanf(stdout, "published c-text seq %d\n", &seq); err != nil || seq == 0 {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		// The same ID again is the same command, stored once.
		stdout, stderr, code = e.run(t, append([]string{"upsert", "--id", "c-text", "--set", "a=b"}, key...)...)
		want := "already in the journal: c-text seq " + strconv.FormatUint(seq, 10)
		if code != cli.ExitOK || !strings.HasPrefix(stdout, want) {
			t.Fatalf("again: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
		}
	})
}

func TestWriterUsageErrors(t *testing.T) {
	t.Parallel()
	key := []string{"--table", "orders", "--pk", "p", "--rk", "r"}
	up := func(extra ...string) []string { return append(append([]string{"upsert"}, key...), extra...) }
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"no operation", nil, []string{"no operation before \"--nats\"", "writer OP [flags]"}},
		{"unknown operation", []string{"frobnicate"}, []string{`unknown operation "frobnicate"`}},
		{"unknown flag", up("--frob"), []string{"-frob"}},
		{"missing table", []string{"upsert", "--pk", "p", "--rk", "r"}, []string{"--table is required"}},
		{"missing rk", []string{"delete", "--table", "orders", "--pk", "p"}, []string{"--rk is required"}},
		{"unknown type", up("--set", "qty:int65=3"), []string{`--set "qty:int65=3"`, `unknown type "int65"`, "int64"}},
		{"bad int32", up("--set", "qty:int32=99999999999"), []string{`--set "qty:int32=99999999999"`, "not an int32"}},
		{"bad int64", up("--set", "qty:int64=1.5"), []string{"--set", "not an int64"}},
		{"bad double", up("--set", "d:double=abc"), []string{"--set", "not a double"}},
		{"bad datetime", up("--set", "t:datetime=yesterday"), []string{"--set", "not a datetime", "RFC 3339"}},
		{"bad guid", up("--set", "g:guid=xyz"), []string{"--set", "not a GUID"}},
		{"bad binary", up("--set", "b:binary=!!!"), []string{"--set", "base64"}},
		{"bad bool", up("--set", "b:bool=yes"), []string{"--set", "true or false"}},
		{"no equals", up("--set", "novalue"), []string{"--set", "no '='"}},
		{"set twice", up("--set", "a=1", "--set", "a:int=2"), []string{`property "a" is set twice`}},
		{"binary file missing", up("--set", "b:binary=@/nonexistent/file"), []string{"--set", "/nonexistent/file"}},
		{"delete with set", []string{"delete", "--table", "orders", "--pk", "p", "--rk", "r", "--set", "a=1"}, []string{"delete takes no properties"}},
		{"meta without value", up("--meta", "novalue"), []string{`--meta "novalue"`, "key=value"}},
		{"meta twice", up("--meta", "k=1", "--meta", "k=2"), []string{`key "k" is set twice`}},
		{"bad encoding", up("--encoding", "xml"), []string{"--encoding", "msgpack or json"}},
		{"bad timeout", up("--timeout", "0s"), []string{"--timeout"}},
		{"bad if-version", up("--if-version", "x"), []string{"if-version"}},
		{"if-version twice", append([]string{"replace"}, append(key, "--if-version", "9", "--if-version", "1")...), []string{"-if-version", "given twice (9, then 1)", string(rules.IfVersionTwice)}},
		{"positional after op", up("extra"), []string{`unexpected argument "extra"`}},
		{"apply-only flag", up("--verbose"), []string{"--verbose is for apply only"}},
		{"op flag on apply", []string{"apply", "--table", "orders", "f.jsonl"}, []string{"--table is not for apply"}},
		{"apply without file", []string{"apply"}, []string{"one FILE"}},
		{"apply two files", []string{"apply", "a", "b"}, []string{"one FILE"}},
	}
	if _, stderr, code := runWriter(t); code != cli.ExitUsage || !strings.Contains(stderr, "no operation: want insert") {
		t.Errorf("no arguments: exit %d, stderr %q", code, stderr)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runWriter(t, append(tt.args, "--nats", unreachableNATS)...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
}

// Invalid commands are refused before connecting, with the rule named.
func TestWriterInvalidCommand(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, events.MaxBinaryBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	key := []string{"--pk", "p", "--rk", "r"}
	tests := []struct {
		name string
		args []string
		rule rules.Rule
	}{
		{"table name", append([]string{"upsert", "--table", "ab"}, key...), rules.TableName},
		{"id charset", append([]string{"upsert", "--table", "orders", "--id", "bad id"}, key...), rules.IDCharset},
		{"key char", []string{"upsert", "--table", "orders", "--pk", "p", "--rk", "a#b"}, rules.KeyForbiddenChar},
		{"reserved property", append([]string{"upsert", "--table", "orders", "--set", "_v=1"}, key...), rules.PropertyReserved},
		{"property name", append([]string{"upsert", "--table", "orders", "--set", "1abc=1"}, key...), rules.PropertyName},
		{"insert if version", append([]string{"insert", "--table", "orders", "--if-version", "1"}, key...), rules.InsertIfVersion},
		{"negative if version", append([]string{"replace", "--table", "orders", "--if-version", "-1"}, key...), rules.IfVersionNegative},
		{"binary too long", append([]string{"upsert", "--table", "orders", "--set", "b:binary=@" + big}, key...), rules.BinaryTooLong},
		{"meta key", append([]string{"upsert", "--table", "orders", "--meta", "=v"}, key...), rules.MetaKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runWriter(t, append(tt.args, "--nats", unreachableNATS)...)
			if code != cli.ExitRejected {
				t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitRejected, stderr)
			}
			if !strings.Contains(stderr, "rule "+string(tt.rule)) || !strings.HasPrefix(stderr, "rejected: invalid command") {
				t.Errorf("stderr %q does not name rule %s", stderr, tt.rule)
			}
		})
	}
}

func TestWriterConnectionErrors(t *testing.T) {
	t.Parallel()
	key := []string{"upsert", "--table", "orders", "--pk", "p", "--rk", "r"}
	t.Run("no server, secrets hidden", func(t *testing.T) {
		t.Parallel()
		_, stderr, code := runWriter(t, append(key, "--nats", "nats://bob:hunter2@127.0.0.1:1", "--user", "alice", "--password", "s3cret-pw")...)
		if code != cli.ExitFailure {
			t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitFailure, stderr)
		}
		if strings.Contains(stderr, "hunter2") || strings.Contains(stderr, "s3cret-pw") {
			t.Errorf("stderr shows a secret: %q", stderr)
		}
		if !strings.Contains(stderr, "connect to NATS") {
			t.Errorf("stderr %q does not say what failed", stderr)
		}
	})
	t.Run("no journal stream", func(t *testing.T) {
		t.Parallel()
		srv := journaltest.StartServer(t)
		_, stderr, code := runWriter(t, append(key, "--nats", srv.ClientURL())...)
		if code != cli.ExitFailure || !strings.Contains(stderr, "journal stream JOURNAL does not exist") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("wait without outcomes stream", func(t *testing.T) {
		t.Parallel()
		e := startWriterEnv(t, false)
		file := filepath.Join(t.TempDir(), "empty.jsonl")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{append(key, "--wait"), {"apply", "--wait", file}} {
			_, stderr, code := e.run(t, args...)
			if code != cli.ExitFailure || !strings.Contains(stderr, "is a projector running?") {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
			}
		}
		if head, _ := e.j.Head(journaltest.Context(t, 5*time.Second)); head != 0 {
			t.Errorf("journal head %d: nothing should be published when the wait cannot work", head)
		}
	})
	t.Run("no outcome within timeout", func(t *testing.T) {
		t.Parallel()
		e := startWriterEnv(t, false)
		if _, err := outcomes.Ensure(journaltest.Context(t, 5*time.Second), e.js); err != nil {
			t.Fatal(err)
		}
		// --timeout bounds the publish too: it must be long enough for
		// the publish to be acknowledged on a loaded machine (-race, other
		// packages testing at once: 300ms was not), so that what runs out
		// is the wait for the outcome no projector will publish.
		stdout, stderr, code := e.run(t, append(key, "--wait", "--timeout", "3s")...)
		if code != cli.ExitFailure || !strings.Contains(stderr, "no outcome for command") || !strings.Contains(stdout, "published ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}

func TestWriterHelp(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv(cli.EnvNATSPassword, "s3cret-pw")
	t.Setenv(cli.EnvNATS, "nats://bob:hunter2@nats.example:4222")
	t.Setenv(cli.EnvNATSUser, "alice")
	fs, _, _ := writerFlagSet(&writerBase{})
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"upsert", "--help"}, {"apply", "-h"}} {
		stdout, stderr, code := runWriter(t, args...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		out := stdout + stderr
		for _, secret := range []string{"s3cret-pw", "hunter2"} {
			if strings.Contains(out, secret) {
				t.Errorf("%v: help shows the secret %q", args, secret)
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(out, "-"+f.Name+" ") && !strings.Contains(out, "-"+f.Name+"\n") {
				t.Errorf("%v: help does not document --%s", args, f.Name)
			}
		})
		for _, env := range []string{cli.EnvNATS, cli.EnvNATSCreds, cli.EnvNATSNkey, cli.EnvNATSUser, cli.EnvNATSPassword} {
			if !strings.Contains(out, env) {
				t.Errorf("%v: help does not document %s", args, env)
			}
		}
		for _, typ := range []string{":string=", ":bool=", ":int32=", ":int64=", ":double=", ":datetime=", ":guid=", ":binary=", ":binary=@"} {
			if !strings.Contains(out, typ) {
				t.Errorf("%v: help does not document --set name%s", args, typ)
			}
		}
	}
}

// writerPublishRaw publishes cmd the way a client without the Writer
// might: msgpack, no Nats-Msg-Id header, so JetStream does not deduplicate
// it.
func writerPublishRaw(t *testing.T, js jetstream.JetStream, cmd *events.Command) uint64 {
	t.Helper()
	data, err := events.Encode(cmd, wire.ContentTypeMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(journaltest.Context(t, 10*time.Second), &nats.Msg{Subject: wire.JournalSubject(cmd.Table, cmd.PK), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

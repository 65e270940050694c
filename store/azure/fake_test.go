package azure

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// fake is a scripted table service: each request gets the next response.
// It records the requests it saw.
type fake struct {
	t         *testing.T
	mu        sync.Mutex
	responses []func(w http.ResponseWriter, r *http.Request)
	requests  []*http.Request
}

func newFake(t *testing.T, responses ...func(w http.ResponseWriter, r *http.Request)) (*fake, *Store) {
	f := &fake{t: t, responses: responses}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	s, err := New(Config{
		ConnectionString: "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + devAccountKey +
			";TableEndpoint=" + ts.URL + "/devstoreaccount1",
		RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r)
	if len(f.responses) == 0 {
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	next := f.responses[0]
	f.responses = f.responses[1:]
	next(w, r)
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// page answers a query with entities (row keys of partition p) and a
// continuation ("" for none).
func page(nextPK, nextRK string, rks ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var ents []string
		for _, rk := range rks {
			ents = append(ents, fmt.Sprintf(`{"odata.etag":"W/\"datetime'2026-11-21T10%%3A00%%3A00.0000000Z'\"","PartitionKey":"p","RowKey":%q,"Timestamp":"2026-11-21T10:00:00.0000000Z","n":1}`, rk))
		}
		if nextPK != "" {
			w.Header().Set("x-ms-continuation-NextPartitionKey", nextPK)
			w.Header().Set("x-ms-continuation-NextRowKey", nextRK)
		}
		w.Header().Set("Content-Type", "application/json;odata=minimalmetadata")
		fmt.Fprintf(w, `{"odata.metadata":"x","value":[%s]}`, strings.Join(ents, ","))
	}
}

func status(code int, errCode string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ms-error-code", errCode)
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"it failed\nRequestId:1"}}}`, errCode)
	}
}

// Azure may answer a page with no entities and a continuation (at a
// partition boundary, or after 5 s of scanning). Query follows those until
// it has an entity, and hands out the continuation of the page it returns.
func TestQueryFollowsEmptyPages(t *testing.T) {
	f, s := newFake(t,
		page("1!p1", "1!a"),
		page("1!p2", "1!b"),
		page("1!p3", "1!c", "r1", "r2"),
		page("", "", "r3"),
	)
	p, err := s.Query(bg, "orders", store.Query{PK: "it's", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entities) != 2 || p.Entities[0].RK != "r1" || p.Continuation == "" {
		t.Fatalf("first page = %+v", p)
	}
	p, err = s.Query(bg, "orders", store.Query{PK: "it's", Limit: 2, Continuation: p.Continuation})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entities) != 1 || p.Entities[0].RK != "r3" || p.Continuation != "" {
		t.Fatalf("second page = %+v", p)
	}
	want := []struct{ npk, nrk string }{{"", ""}, {"1!p1", "1!a"}, {"1!p2", "1!b"}, {"1!p3", "1!c"}}
	for i, r := range f.requests {
		q := r.URL.Query()
		if q.Get("NextPartitionKey") != want[i].npk || q.Get("NextRowKey") != want[i].nrk {
			t.Errorf("request %d continued from (%q, %q), want (%q, %q)", i, q.Get("NextPartitionKey"), q.Get("NextRowKey"), want[i].npk, want[i].nrk)
		}
		if q.Get("$top") != "2" {
			t.Errorf("request %d: $top = %q", i, q.Get("$top"))
		}
		if q.Get("$filter") != "PartitionKey eq 'it''s'" {
			t.Errorf("request %d: $filter = %q", i, q.Get("$filter"))
		}
	}
}

// A range that ends in empty pages ends with an empty page and no
// continuation.
func TestQueryEndsOnEmptyPages(t *testing.T) {
	_, s := newFake(t, page("1!x", "1!y"), page("", ""))
	p, err := s.Query(bg, "orders", store.Query{AllPartitions: true})
	if err != nil || len(p.Entities) != 0 || p.Continuation != "" {
		t.Fatalf("Query = %+v, %v", p, err)
	}
}

// Entities that the server returns but store.MatchFilter rejects are
// dropped; a page left empty is followed like an empty page.
func TestQueryFiltersAgain(t *testing.T) {
	_, s := newFake(t, page("1!x", "1!y", "a", "b"), page("", "", "c"))
	p, err := s.Query(bg, "orders", store.Query{AllPartitions: true, Filter: []store.Cond{{Prop: "n", Cmp: store.Eq, Value: edm.Int64(1)}}})
	if err != nil || len(p.Entities) != 0 || p.Continuation != "" {
		// n is an Int32 1 in every row: no Int64 condition matches it.
		t.Fatalf("Query = %+v, %v", p, err)
	}
}

func TestRetries(t *testing.T) {
	t.Run("transient then success", func(t *testing.T) {
		f, s := newFake(t, status(503, "ServerBusy"), status(500, "InternalError"), page("", "", "r"))
		p, err := s.Query(bg, "orders", store.Query{AllPartitions: true})
		if err != nil || len(p.Entities) != 1 {
			t.Fatalf("Query = %+v, %v", p, err)
		}
		if f.count() != 3 {
			t.Errorf("%d requests, want 3", f.count())
		}
	})
	for _, code := range []int{408, 429, 500, 503, 504} {
		t.Run(fmt.Sprint("always ", code), func(t *testing.T) {
			var rs []func(http.ResponseWriter, *http.Request)
			for range 5 {
				rs = append(rs, status(code, ""))
			}
			f, s := newFake(t, rs...)
			_, err := s.Get(bg, "orders", "p", "r")
			if !errors.Is(err, store.ErrBusy) {
				t.Errorf("err = %v, want ErrBusy", err)
			}
			if f.count() != 5 {
				t.Errorf("%d requests, want 5 (4 retries)", f.count())
			}
		})
	}
	for _, tc := range []struct {
		code    int
		errCode string
		want    error
	}{
		{409, "TableAlreadyExists", store.ErrTableExists},
		{409, "TableBeingDeleted", store.ErrBusy},
		{412, "UpdateConditionNotSatisfied", store.ErrPrecondition},
		{413, "RequestBodyTooLarge", store.ErrTooLarge},
		{400, "InvalidInput", store.ErrInvalid},
		{404, "ResourceNotFound", store.ErrTableNotFound},
	} {
		t.Run(fmt.Sprint("never ", tc.code, tc.errCode), func(t *testing.T) {
			f, s := newFake(t, status(tc.code, tc.errCode))
			err := s.CreateTable(bg, "orders")
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if f.count() != 1 {
				t.Errorf("%d requests, want 1", f.count())
			}
		})
	}
}

// batchFailure answers a $batch as Azure does when op index failed.
func batchFailure(status int, code string, index int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "multipart/mixed; boundary=batchresponse_1")
		w.WriteHeader(http.StatusAccepted)
		body := "--batchresponse_1\r\n" +
			"Content-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n" +
			"--changesetresponse_2\r\n" +
			"Content-Type: application/http\r\n" +
			"Content-Transfer-Encoding: binary\r\n\r\n" +
			fmt.Sprintf("HTTP/1.1 %d %s\r\n", status, http.StatusText(status)) +
			"X-Content-Type-Options: nosniff\r\n" +
			"DataServiceVersion: 3.0;\r\n" +
			"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n" +
			fmt.Sprintf(`{"odata.error":{"code":%q,"message":{"lang":"en-US","value":"%d:The operation failed.\nRequestId:x\nTime:y"}}}`, code, index) + "\r\n" +
			"--changesetresponse_2--\r\n" +
			"--batchresponse_1--\r\n"
		io.WriteString(w, body)
	}
}

func TestTxErrorFromBatchResponse(t *testing.T) {
	ops := []store.Op{
		{Kind: store.Upsert, RK: "a", Props: edm.Entity{}},
		{Kind: store.Upsert, RK: "b", Props: edm.Entity{}},
		{Kind: store.Insert, RK: "c", Props: edm.Entity{}},
	}
	for _, tc := range []struct {
		status int
		code   string
		index  int
		want   error
	}{
		{409, "EntityAlreadyExists", 2, store.ErrExists},
		{412, "UpdateConditionNotSatisfied", 1, store.ErrPrecondition},
		{404, "ResourceNotFound", 0, store.ErrNotFound},
		{400, "EntityTooLarge", 1, store.ErrTooLarge},
		{400, "OutOfRangeInput", 2, store.ErrInvalid},
		{503, "ServerBusy", 0, store.ErrBusy},
	} {
		f, s := newFake(t, batchFailure(tc.status, tc.code, tc.index))
		_, err := s.Transact(bg, "orders", "p", ops)
		var te *store.TxError
		if !errors.As(err, &te) || te.Index != tc.index || te.RK != ops[tc.index].RK || !errors.Is(err, tc.want) {
			t.Errorf("%d %s at %d: err = %v", tc.status, tc.code, tc.index, err)
		}
		if f.count() != 1 {
			t.Errorf("%s: %d requests, want 1 (a refused transaction is not retried)", tc.code, f.count())
		}
	}
	// Cosmos DB answers with a plain JSON error that may carry the index.
	_, s := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-us","value":"1:The specified entity already exists.\nRequestID:z"}}}`)
	})
	_, err := s.Transact(bg, "orders", "p", ops)
	var te *store.TxError
	if !errors.As(err, &te) || te.Index != 1 || !errors.Is(err, store.ErrExists) {
		t.Errorf("JSON batch error: %v", err)
	}
}

func TestBuildFilter(t *testing.T) {
	dt := edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC))
	g, _ := edm.Guid("0F8FAD5B-D9CB-469F-A165-70867728950E")
	for _, tc := range []struct {
		q        store.Query
		emulator bool
		want     string
	}{
		{store.Query{AllPartitions: true}, false, ""},
		{store.Query{}, false, "PartitionKey eq ''"},
		{store.Query{PK: "o'k", From: "a'", To: "b''"}, false, "PartitionKey eq 'o''k' and RowKey ge 'a''' and RowKey lt 'b'''''"},
		{store.Query{AllPartitions: true, Filter: []store.Cond{
			{Prop: "s", Cmp: store.Ne, Value: edm.String("x' or 1 eq 1 or 'y")},
			{Prop: "i", Cmp: store.Gt, Value: edm.Int32(-5)},
			{Prop: "l", Cmp: store.Le, Value: edm.Int64(9007199254740993)},
			{Prop: "d", Cmp: store.Lt, Value: edm.Double(5)},
			{Prop: "e", Cmp: store.Ge, Value: edm.Double(1e300)},
			{Prop: "t", Cmp: store.Eq, Value: dt},
			{Prop: "g", Cmp: store.Eq, Value: g},
			{Prop: "b", Cmp: store.Eq, Value: edm.Binary([]byte{0, 0xab})},
			{Prop: "f", Cmp: store.Eq, Value: edm.Bool(false)},
		}}, false, "s ne 'x'' or 1 eq 1 or ''y' and i gt -5 and l le 9007199254740993L and d lt 5.0 and e ge 1" + strings.Repeat("0", 300) + ".0 and " +
			"t eq datetime'2026-11-21T10:00:00.1234567Z' and g eq guid'0f8fad5b-d9cb-469f-a165-70867728950e' and b eq X'00ab' and f eq false"},
		// Left to the client: Int64 on Azurite, NaN, ordering of Guid /
		// Binary / Boolean, names that are no identifiers.
		{store.Query{PK: "p", Filter: []store.Cond{
			{Prop: "l", Cmp: store.Eq, Value: edm.Int64(1)},
			{Prop: "n", Cmp: store.Eq, Value: edm.Double(math.NaN())},
			{Prop: "g", Cmp: store.Lt, Value: g},
			{Prop: "b", Cmp: store.Gt, Value: edm.Binary(nil)},
			{Prop: "f", Cmp: store.Ge, Value: edm.Bool(true)},
			{Prop: "x eq 1 or y", Cmp: store.Eq, Value: edm.Int32(1)},
			{Prop: "PartitionKey", Cmp: store.Eq, Value: edm.String("q")},
		}}, true, "PartitionKey eq 'p'"},
	} {
		if got := buildFilter(tc.q, tc.emulator); got != tc.want {
			t.Errorf("buildFilter(%+v)\n got %s\nwant %s", tc.q.Filter, got, tc.want)
		}
	}
}

func TestConfig(t *testing.T) {
	const key = "c2VjcmV0LWtleS10aGF0LW11c3QtbmV2ZXItbGVhaw=="
	const sas = "sv=2019&sig=c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"
	for _, tc := range []struct {
		cfg      Config
		endpoint string
		account  string
		ok       bool
	}{
		{Config{ConnectionString: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net"}, "https://acct.table.core.windows.net", "acct", true},
		{Config{ConnectionString: "AccountName=acct;AccountKey=" + key}, "https://acct.table.core.windows.net", "acct", true},
		{Config{ConnectionString: "DefaultEndpointsProtocol=https;AccountName=cosmo;AccountKey=" + key + ";TableEndpoint=https://cosmo.table.cosmos.azure.com:443/;"}, "https://cosmo.table.cosmos.azure.com:443", "cosmo", true},
		{Config{ConnectionString: "TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=" + sas}, "https://acct.table.core.windows.net", "acct", true},
		{Config{ConnectionString: "UseDevelopmentStorage=true"}, devEndpoint, devAccountName, true},
		{Config{Endpoint: "https://acct.table.core.windows.net/", SharedKeyAccount: "acct", SharedKey: key}, "https://acct.table.core.windows.net", "acct", true},
		{Config{Endpoint: "https://acct.table.core.windows.net/?" + sas}, "https://acct.table.core.windows.net", "acct", true},
		{Config{Endpoint: "http://127.0.0.1:10002/devstoreaccount1", SAS: "?" + sas}, "http://127.0.0.1:10002/devstoreaccount1", devAccountName, true},
		{Config{}, "", "", false},
		{Config{ConnectionString: "AccountName=acct;AccountKey=" + key, Endpoint: "https://x"}, "", "", false},
		{Config{ConnectionString: "AccountName=acct"}, "", "", false},
		{Config{ConnectionString: "garbage " + key}, "", "", false},
		{Config{ConnectionString: "AccountName=a;AccountKey=" + key + ";SharedAccessSignature=" + sas}, "", "", false},
		{Config{Endpoint: "ftp://x", SharedKey: key}, "", "", false},
		{Config{Endpoint: "https://x?" + sas, SharedKeyAccount: "x", SharedKey: key}, "", "", false},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.cfg, err, tc.ok)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "c2VjcmV0LXNpZ25hdHVyZQ") {
				t.Errorf("Validate error quotes a secret: %v", err)
			}
			continue
		}
		a, err := tc.cfg.resolve()
		if err != nil || a.endpoint != tc.endpoint || a.name != tc.account {
			t.Errorf("resolve(%+v) = %+v, %v; want endpoint %s, account %s", tc.cfg, a, err, tc.endpoint, tc.account)
		}
		if _, err := New(tc.cfg); err != nil {
			t.Errorf("New(%+v): %v", tc.cfg, err)
		}
	}
}

func TestDecodeNumbers(t *testing.T) {
	e, err := decodeEntity([]byte(`{"PartitionKey":"p","RowKey":"r","a":5,"b":5.0,"c":1e+300,"d":3000000000,` +
		`"e":"12","e@odata.type":"Edm.Int64","f":"NaN","f@odata.type":"Edm.Double","g":-0.5,"h":null}`))
	if err != nil {
		t.Fatal(err)
	}
	checkProps(t, "decode", edm.Entity{
		"a": edm.Int32(5), "b": edm.Double(5), "c": edm.Double(1e300), "d": edm.Double(3e9),
		"e": edm.Int64(12), "f": edm.Double(math.NaN()), "g": edm.Double(-0.5),
	}, e.Props)
}

// The $batch body the service receives for keys the SDK cannot address
// itself: URL key literals with quotes doubled, JSON bodies with the keys as
// they are, and every operation's Content-Length still right.
func TestBatchKeysRewrite(t *testing.T) {
	type inner struct {
		method, path, body string
	}
	var got []inner
	f, s := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		outer := multipart.NewReader(r.Body, params["boundary"])
		cs, err := outer.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		_, csParams, _ := mime.ParseMediaType(cs.Header.Get("Content-Type"))
		parts := multipart.NewReader(cs, csParams["boundary"])
		for {
			p, err := parts.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.ReadRequest(bufio.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatalf("inner body shorter than its Content-Length: %v", err)
			}
			if rest, _ := io.ReadAll(p); len(bytes.TrimSpace(rest)) != 0 {
				t.Errorf("inner body longer than its Content-Length by %q", rest)
			}
			got = append(got, inner{req.Method, req.URL.EscapedPath(), strings.TrimSpace(string(b))})
		}
		w.Header().Set("Content-Type", "multipart/mixed; boundary=batchresponse_1")
		w.WriteHeader(http.StatusAccepted)
		// One response per op, as Azure answers: an ETag for each but the
		// delete.
		resp := "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=cs_2\r\n\r\n"
		for i, op := range got {
			etag := ""
			if op.method != "DELETE" {
				etag = fmt.Sprintf("ETag: W/\"datetime'%d'\"\r\n", i)
			}
			resp += "--cs_2\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n" + etag + "\r\n\r\n"
		}
		io.WriteString(w, resp+"--cs_2--\r\n--batchresponse_1--\r\n")
	})
	long := strings.Repeat("x", 200) + "'<&>"
	_, err := s.Transact(bg, "orders", "", []store.Op{
		{Kind: store.Insert, RK: "ins'ert", Props: edm.Entity{"n": edm.Int32(1)}},
		{Kind: store.Replace, RK: "it's", Props: edm.Entity{"n": edm.Int32(2)}},
		{Kind: store.Merge, RK: long, Props: edm.Entity{}},
		{Kind: store.Delete, RK: "plain"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.count() != 1 || len(got) != 4 {
		t.Fatalf("%d requests, %d operations", f.count(), len(got))
	}
	want := []inner{
		{"POST", "/devstoreaccount1/orders", `{"PartitionKey":"","RowKey":"ins'ert","n":1}`},
		{"PUT", "/devstoreaccount1/orders(PartitionKey='',RowKey='it%27%27s')", `{"PartitionKey":"","RowKey":"it's","n":2}`},
		{"PATCH", "/devstoreaccount1/orders(PartitionKey='',RowKey='" + strings.Repeat("x", 200) + "%27%27%3C&%3E')", `{"PartitionKey":"","RowKey":"` + strings.Repeat("x", 200) + `'\u003c\u0026\u003e"}`},
		{"DELETE", "/devstoreaccount1/orders(PartitionKey='',RowKey='plain')", ""},
	}
	for i, w := range want {
		g := got[i]
		if g.method != w.method || g.path != w.path || !sameJSON(g.body, w.body) {
			t.Errorf("op %d:\n got %s %s %s\nwant %s %s %s", i, g.method, g.path, g.body, w.method, w.path, w.body)
		}
	}
}

// sameJSON compares two JSON texts as values; "" equals "".
func sameJSON(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

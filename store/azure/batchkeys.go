package azure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/tablejournal/tablejournal/store"
)

// Two bugs of aztables v1.4.1's SubmitTransaction, worked around here:
//
//   - It builds the URL of every operation but Insert,
//     table(PartitionKey='pk',RowKey='rk'), without doubling the single
//     quotes of the keys as OData key literals need (its point operations
//     do double them), so a key with a quote breaks the request.
//   - It refuses an empty PartitionKey in that URL, though Azure allows the
//     empty key.
//
// For the keys affected, Transact gives the SDK a placeholder token instead
// ([A-Za-z0-9] only, so neither URL escaping nor JSON changes it), and
// batchKeyPolicy, which sees the finished $batch body before it is signed
// and sent, replaces each token: inside the URL's key literal by the escaped
// key with quotes doubled, inside the JSON body by the key itself. The JSON
// replacement keeps the body's length, padding with spaces after the value,
// because the SDK has already written each operation's Content-Length; the
// token is made at least as long as the key's JSON. If the body does not
// hold every token exactly where expected (a future SDK writes batches
// differently), the request fails instead of being sent.

// batchKeys is what batchKeyPolicy replaces in one transaction's body.
type batchKeys struct {
	prefix string // common to every token of this transaction
	url    map[string]string
	json   map[string]string
}

type batchKeysCtx struct{}

// newBatchKeys returns an empty set of replacements with a fresh token
// prefix.
func newBatchKeys() (*batchKeys, error) {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	return &batchKeys{prefix: "tjkey" + hex.EncodeToString(nonce[:]), url: map[string]string{}, json: map[string]string{}}, nil
}

// needsFix reports whether the SDK cannot address key itself.
func needsFix(key string, isPK bool) bool {
	return strings.Contains(key, "'") || (isPK && key == "")
}

// token returns the placeholder for key, registering its replacements.
func (b *batchKeys) token(key, role string, index int) string {
	quoted, _ := json.Marshal(key)
	tok := fmt.Sprintf("%sx%d%s", b.prefix, index, role)
	if pad := len(quoted) - 2 - len(tok); pad > 0 {
		tok += strings.Repeat("z", pad)
	}
	b.url[tok] = url.PathEscape(strings.ReplaceAll(key, "'", "''"))
	b.json[tok] = string(quoted) + strings.Repeat(" ", len(tok)+2-len(quoted))
	return tok
}

// keysFor returns the keys to give the SDK for op number index.
func (b *batchKeys) keysFor(pk string, op store.Op, index int) (string, string) {
	if op.Kind == store.Insert {
		return pk, op.RK // no URL: the body carries the keys as they are
	}
	if needsFix(pk, true) {
		pk = b.token(pk, "p", index)
	}
	rk := op.RK
	if needsFix(rk, false) {
		rk = b.token(rk, "r", index)
	}
	return pk, rk
}

// batchKeyPolicy is a per-call pipeline policy: it rewrites the tokens of
// the transaction in the request's context, if any.
type batchKeyPolicy struct{}

func (batchKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	b, _ := req.Raw().Context().Value(batchKeysCtx{}).(*batchKeys)
	if b == nil || len(b.url) == 0 || req.Raw().Method != http.MethodPost || !strings.HasSuffix(req.Raw().URL.Path, "$batch") || req.Body() == nil {
		return req.Next()
	}
	raw, err := io.ReadAll(req.Body())
	if err != nil {
		return nil, err
	}
	body := string(raw)
	for tok, u := range b.url {
		lit := "'" + tok + "'"
		if strings.Count(body, lit) != 1 {
			return nil, errors.New("azure: batch body is not as expected; keys with quotes or empty partition keys cannot be sent with this aztables version")
		}
		body = strings.Replace(body, lit, "'"+u+"'", 1)
		body = strings.ReplaceAll(body, `"`+tok+`"`, b.json[tok])
	}
	if strings.Contains(body, b.prefix) || len(body)-len(raw) != urlGrowth(b) {
		return nil, errors.New("azure: batch body holds a key placeholder in an unexpected place")
	}
	if err := req.SetBody(streaming.NopCloser(strings.NewReader(body)), req.Raw().Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return req.Next()
}

// urlGrowth is how much the URL replacements lengthen the body: the JSON
// replacements keep their length.
func urlGrowth(b *batchKeys) int {
	n := 0
	for tok, u := range b.url {
		n += len(u) - len(tok)
	}
	return n
}

// withBatchKeys returns ctx carrying b for batchKeyPolicy, if b has any
// replacement.
func withBatchKeys(ctx context.Context, b *batchKeys) context.Context {
	if len(b.url) == 0 {
		return ctx
	}
	return context.WithValue(ctx, batchKeysCtx{}, b)
}

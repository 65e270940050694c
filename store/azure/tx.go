package azure

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/store"
)

// Transact implements store.Store: one entity-group transaction through the
// SDK's SubmitTransaction, after store.ValidateTx. It returns the etag of
// each op's entity as the service reports it in the op's response inside
// the $batch response (an ETag header per insert, update or merge; none for
// a delete). The SDK discards that response; it is read here from the raw
// response. A response that does not carry them (never seen from Azure,
// Azurite or Cosmos DB) is an error, although the transaction committed: a
// caller cannot make its next write conditional on what this one wrote.
func (s *Store) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	if err := store.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := store.ValidateTx(pk, ops); err != nil {
		return nil, err
	}
	if err := store.ValidateTxLimits(pk, ops, s.limits); err != nil {
		return nil, err
	}
	keys, err := newBatchKeys()
	if err != nil {
		return nil, fmt.Errorf("azure: transact %s: %w", table, err)
	}
	actions := make([]aztables.TransactionAction, len(ops))
	for i, op := range ops {
		epk, erk := keys.keysFor(pk, op, i)
		a, err := action(epk, erk, op)
		if err != nil {
			return nil, &store.TxError{Index: i, RK: op.RK, Err: err}
		}
		actions[i] = a
	}
	var resp *http.Response
	_, err = s.svc.NewClient(table).SubmitTransaction(policy.WithCaptureResponse(withBatchKeys(ctx, keys), &resp), actions, nil)
	if err != nil {
		return nil, s.txError("transact "+table, err, ops)
	}
	etags := batchETags(resp, len(ops))
	if etags == nil {
		return nil, fmt.Errorf("azure: transact %s: committed, but the response does not carry the etags of its %d ops", table, len(ops))
	}
	return etags, nil
}

// batchETags reads the ETag header of each op's response in a successful
// $batch response, in op order (Azure and Azurite answer the ops in the
// order sent, SPEC of OData batches); nil if the body cannot be read as
// one response per op.
func batchETags(resp *http.Response, n int) []string {
	if resp == nil {
		return nil
	}
	body, err := runtime.Payload(resp)
	if err != nil {
		return nil
	}
	boundary, ok := multipartBoundary(resp.Header.Get("Content-Type"), body)
	if !ok {
		return nil
	}
	var etags []string
	var walk func(mr *multipart.Reader, depth int) bool
	walk = func(mr *multipart.Reader, depth int) bool {
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				return true
			}
			if err != nil {
				return false
			}
			data, err := io.ReadAll(part)
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				return false
			}
			if ct := part.Header.Get("Content-Type"); strings.HasPrefix(ct, "multipart/") {
				b, ok := multipartBoundary(ct, data)
				if !ok || depth >= 2 || !walk(multipart.NewReader(bytes.NewReader(data), b), depth+1) {
					return false
				}
				continue
			}
			r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), nil)
			if err != nil {
				return false
			}
			r.Body.Close()
			etags = append(etags, r.Header.Get("ETag"))
		}
	}
	if !walk(multipart.NewReader(bytes.NewReader(body), boundary), 0) || len(etags) != n {
		return nil
	}
	return etags
}

// action translates one op, with the keys to give the SDK (see
// batchkeys.go).
func action(pk, rk string, op store.Op) (aztables.TransactionAction, error) {
	var a aztables.TransactionAction
	body, err := encodeEntity(pk, rk, op.Props)
	if err != nil {
		return a, err
	}
	a.Entity = body
	ifMatch := func() *azcore.ETag {
		// Replace, Merge and Delete must hit an existing row: "*" says so.
		// Without an If-Match header a PUT or MERGE would be an upsert.
		t := azcore.ETagAny
		if op.IfMatch != "" {
			t = azcore.ETag(op.IfMatch)
		}
		return &t
	}
	switch op.Kind {
	case store.Insert:
		a.ActionType = aztables.TransactionTypeAdd
	case store.Replace:
		a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateReplace, ifMatch()
	case store.Merge:
		a.ActionType, a.IfMatch = aztables.TransactionTypeUpdateMerge, ifMatch()
	case store.Upsert:
		a.ActionType = aztables.TransactionTypeInsertReplace
	case store.UpsertMerge:
		a.ActionType = aztables.TransactionTypeInsertMerge
	case store.Delete:
		a.ActionType, a.IfMatch = aztables.TransactionTypeDelete, ifMatch()
	default:
		return a, fmt.Errorf("unknown operation %d: %w", op.Kind, store.ErrInvalid)
	}
	return a, nil
}

// txError turns a failed SubmitTransaction into a *store.TxError naming
// the failed op when the response says which one did, else into a plain
// mapped error.
//
// A refused transaction comes back as HTTP 202 with a multipart body whose
// one inner response carries the failure: a status, an error code and a
// message starting with the index of the failed op ("1:The specified entity
// already exists."). The SDK reports only the outer 202; the body is read
// here. Some failures (a malformed batch, a throttled request, Cosmos DB)
// come back as a plain error response, which may carry the index too.
func (s *Store) txError(op string, err error, ops []store.Op) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return s.wrap(op, err, entityOp)
	}
	body, berr := runtime.Payload(re.RawResponse)
	if berr != nil {
		return s.wrap(op, err, entityOp)
	}
	status, contentID, code := re.StatusCode, -1, re.ErrorCode
	if inner, ok := innerFailure(re.RawResponse.Header.Get("Content-Type"), body); ok {
		status, contentID, body = inner.status, inner.contentID, inner.body
		code = ""
	}
	c, m := parseServiceError(body)
	if code == "" {
		code = c
	}
	index, m := splitIndex(m)
	if index < 0 && contentID > 0 && len(ops) > 1 {
		index = contentID - 1 // Azurite numbers the parts 1.. when the request set no Content-ID
	}
	if index < 0 && len(ops) == 1 {
		index = 0
	}
	e := &requestError{
		op: op, status: status, code: code, msg: s.redact(firstLine(m)),
		kind: kindOf(status, code, entityOp), cause: re,
		refusal: azauth.Explain(status, code, azauth.AuthDetail(body), s.mode, s.service),
	}
	if index < 0 || index >= len(ops) {
		return e
	}
	return &store.TxError{Index: index, RK: ops[index].RK, Err: e}
}

// innerResponse is the failed operation's response inside a batch response.
type innerResponse struct {
	status    int
	contentID int // -1 when absent
	body      []byte
}

// innerFailure finds the first inner response with a status of 400 or more
// in a multipart/mixed batch response: a changeset part holding one
// application/http part per operation (on failure, usually just the failed
// one).
func innerFailure(contentType string, body []byte) (innerResponse, bool) {
	boundary, ok := multipartBoundary(contentType, body)
	if !ok {
		return innerResponse{}, false
	}
	return scanParts(multipart.NewReader(bytes.NewReader(body), boundary), 0)
}

func scanParts(mr *multipart.Reader, depth int) (innerResponse, bool) {
	for {
		part, err := mr.NextPart()
		if err != nil {
			return innerResponse{}, false
		}
		data, err := io.ReadAll(part)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return innerResponse{}, false
		}
		ct := part.Header.Get("Content-Type")
		if strings.HasPrefix(ct, "multipart/") && depth < 2 {
			if b, ok := multipartBoundary(ct, data); ok {
				if r, ok := scanParts(multipart.NewReader(bytes.NewReader(data), b), depth+1); ok {
					return r, true
				}
			}
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), nil)
		if err != nil {
			continue
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			continue
		}
		id := -1
		for _, v := range []string{resp.Header.Get("Content-ID"), part.Header.Get("Content-ID")} {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				id = n
				break
			}
		}
		return innerResponse{status: resp.StatusCode, contentID: id, body: rb}, true
	}
}

// multipartBoundary returns the boundary of a multipart content type, or
// failing that the first line of the body ("--boundary").
func multipartBoundary(contentType string, body []byte) (string, bool) {
	if mt, params, err := mime.ParseMediaType(contentType); err == nil && strings.HasPrefix(mt, "multipart/") && params["boundary"] != "" {
		return params["boundary"], true
	}
	line, _, _ := bytes.Cut(bytes.TrimLeft(body, "\r\n"), []byte("\n"))
	line = bytes.TrimSpace(line)
	if bytes.HasPrefix(line, []byte("--")) && len(line) > 2 {
		return string(line[2:]), true
	}
	return "", false
}

var indexPrefix = regexp.MustCompile(`^(\d+):`)

// splitIndex splits "3:message" into 3 and "message"; -1 if there is no
// index.
func splitIndex(msg string) (int, string) {
	m := indexPrefix.FindStringSubmatch(msg)
	if m == nil {
		return -1, msg
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1, msg
	}
	return n, msg[len(m[0]):]
}

package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/store"
)

// requestError is a failed request to the table service. Its message is
// built from parts that hold no secret: the operation, the HTTP status, the
// service's error code and the first line of its message.
type requestError struct {
	op     string // such as "get orders"
	status int    // 0 for transport errors
	code   string // service error code, such as "EntityAlreadyExists"
	msg    string // first line of the service's message, or the transport error
	kind   error  // the store sentinel, or nil
	cause  error  // the SDK or transport error, sanitized
	// refusal says what to do about an authentication or authorization
	// refusal (a key where the account wants a sign-in, a missing role,
	// a refused token), or is nil.
	refusal *azauth.Refusal
}

func (e *requestError) Error() string {
	var b strings.Builder
	b.WriteString("azure: ")
	b.WriteString(e.op)
	if e.status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.status)
	}
	if e.code != "" {
		b.WriteString(" ")
		b.WriteString(e.code)
	}
	if e.msg != "" {
		b.WriteString(": ")
		if e.refusal != nil {
			b.WriteString(strings.TrimSuffix(e.msg, ".")) // the hint follows
		} else {
			b.WriteString(e.msg)
		}
	}
	if e.kind != nil && (e.msg == "" || !strings.Contains(e.msg, e.kind.Error())) {
		b.WriteString(" (")
		b.WriteString(e.kind.Error())
		b.WriteString(")")
	}
	if e.refusal != nil {
		b.WriteString(": ")
		b.WriteString(e.refusal.Hint)
	}
	return b.String()
}

// Unwrap returns the sentinel, checked with errors.Is, and the cause, so
// that errors.As finds an *azcore.ResponseError or context.Canceled.
func (e *requestError) Unwrap() []error {
	var out []error
	if e.kind != nil {
		out = append(out, e.kind)
	}
	if e.refusal != nil {
		out = append(out, e.refusal)
	}
	if e.cause != nil {
		out = append(out, e.cause)
	}
	return out
}

// notFoundKind says which sentinel a plain 404 means for an operation:
// table operations answer 404 ResourceNotFound for a missing table, entity
// operations for a missing entity (and TableNotFound for a missing table).
type notFoundKind int

const (
	tableOp notFoundKind = iota
	entityOp
)

// serviceError is the error payload of the table service, in both the
// JSON ("odata.error") and the bare form.
type serviceError struct {
	OData *serviceErrorBody `json:"odata.error"`
	serviceErrorBody
}

type serviceErrorBody struct {
	Code    string `json:"code"`
	Message struct {
		Value string `json:"value"`
	} `json:"message"`
}

// parseServiceError reads the code and message of an error body.
func parseServiceError(body []byte) (code, msg string) {
	var se serviceError
	if json.Unmarshal(body, &se) != nil {
		return "", ""
	}
	b := se.serviceErrorBody
	if se.OData != nil {
		b = *se.OData
	}
	return b.Code, b.Message.Value
}

// firstLine returns the first line of a service message, without the
// RequestId and Time lines, cut to a sane length.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// kindOf maps a service error code and HTTP status to a store sentinel.
// Codes come first: they tell a missing table from a missing entity and a
// too-large entity from another bad request.
func kindOf(status int, code string, nf notFoundKind) error {
	switch code {
	case "TableNotFound":
		return store.ErrTableNotFound
	case "ResourceNotFound", "EntityNotFound":
		if nf == tableOp {
			return store.ErrTableNotFound
		}
		return store.ErrNotFound
	case "TableAlreadyExists":
		return store.ErrTableExists
	case "EntityAlreadyExists":
		return store.ErrExists
	case "UpdateConditionNotSatisfied", "ConditionNotMet":
		return store.ErrPrecondition
	case "EntityTooLarge", "PropertyValueTooLarge", "RequestBodyTooLarge", "TooManyProperties":
		return store.ErrTooLarge
	case "TableBeingDeleted", "ServerBusy", "OperationTimedOut", "InternalError":
		// TableBeingDeleted: a deleted table's name is unusable for up to
		// 40 s; retrying later succeeds.
		return store.ErrBusy
	case "OutOfRangeInput", "InvalidInput", "InvalidResourceName", "PropertiesNeedValue",
		"InvalidDuplicateRow", "CommandsInBatchActOnDifferentPartitions", "InvalidValueType":
		return store.ErrInvalid
	}
	switch status {
	case http.StatusNotFound:
		if nf == tableOp {
			return store.ErrTableNotFound
		}
		return store.ErrNotFound
	case http.StatusConflict:
		return store.ErrExists
	case http.StatusPreconditionFailed:
		return store.ErrPrecondition
	case http.StatusRequestEntityTooLarge:
		return store.ErrTooLarge
	case http.StatusBadRequest:
		return store.ErrInvalid
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return store.ErrBusy
	}
	return nil
}

// wrap turns an error from the SDK into a requestError mapped to a store
// sentinel, with no secret in its message or its chain.
func (s *Store) wrap(op string, err error, nf notFoundKind) error {
	if err == nil {
		return nil
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		code, msg, detail := re.ErrorCode, "", ""
		if re.RawResponse != nil {
			if body, berr := runtime.Payload(re.RawResponse); berr == nil {
				c, m := parseServiceError(body)
				if code == "" {
					code = c
				}
				msg = firstLine(m)
				detail = azauth.AuthDetail(body)
			}
		}
		return &requestError{
			op: op, status: re.StatusCode, code: code, msg: s.redact(msg),
			kind: kindOf(re.StatusCode, code, nf), cause: re,
			refusal: azauth.Explain(re.StatusCode, code, detail, s.mode, s.service),
		}
	}
	return s.transportError(op, err)
}

// transportError wraps an error that is not a service response: a
// cancelled context, a network failure, an SDK argument check.
func (s *Store) transportError(op string, err error) error {
	e := &requestError{op: op, cause: azauth.ExplainTLS(sanitize(err))}
	e.msg = s.redact(e.cause.Error())
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The caller's own deadline: not the store's business to classify.
	case isTransient(err):
		e.kind = store.ErrBusy
	}
	return e
}

// isTransient reports network errors worth retrying later: timeouts,
// refused and reset connections. A name that does not resolve is not.
func isTransient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// sanitize removes the query of the request URL from a *url.Error (where a
// SAS signature lives), keeping the rest of the chain for errors.Is.
func sanitize(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	clean := *ue
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.RawQuery, u.Fragment, u.User = "", "", nil
		clean.URL = u.String()
	} else {
		clean.URL = "(url)"
	}
	return &clean
}

// redact replaces every secret the store knows (the account key, the SAS
// token and its signature, raw and URL-escaped), and anything shaped like
// an access token, in s with ***.
func (s *Store) redact(msg string) string {
	msg = azauth.RedactTokens(msg)
	for _, secret := range s.secrets {
		if secret != "" && strings.Contains(msg, secret) {
			msg = strings.ReplaceAll(msg, secret, "***")
		}
	}
	return msg
}

// secretsOf lists the strings that must never appear in an error.
func secretsOf(a account) []string {
	var out []string
	add := func(s string) {
		if len(s) < 8 { // too short to be a credential; would mangle messages
			return
		}
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
	}
	add(a.key)
	add(a.sas)
	if q, err := url.ParseQuery(a.sas); err == nil {
		add(q.Get("sig"))
	}
	return out
}

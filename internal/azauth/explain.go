package azauth

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// Service is an Azure data service, for the role a hint names.
type Service int

const (
	Tables       Service = iota // Azure Storage tables
	Blobs                       // Azure Storage blobs (snapshots)
	CosmosTables                // Azure Cosmos DB for Table
)

// Role is the data role that lets tablejournal read and write the
// service signed in.
func (s Service) Role() string {
	switch s {
	case Blobs:
		return "Storage Blob Data Contributor"
	case CosmosTables:
		return "Cosmos DB Built-in Data Contributor"
	}
	return "Storage Table Data Contributor"
}

// scope is where the role is granted.
func (s Service) scope() string {
	switch s {
	case Blobs:
		return "on the storage account or the snapshots' container"
	case CosmosTables:
		return "on the Cosmos DB account, as a data-plane role assignment (az rest on its tableRoleAssignments; docs/cosmos.md)"
	}
	return "on the storage account (or the tables)"
}

// Refusal is a refusal of the service that a user can act on: its
// message says what to do, and it unwraps to one of ErrKeyNotPermitted,
// ErrRoleMissing and ErrTokenRejected.
type Refusal struct {
	Status int    // the HTTP status
	Code   string // the service's error code
	Hint   string // what to do
	kind   error
}

func (r *Refusal) Error() string {
	s := fmt.Sprintf("HTTP %d", r.Status)
	if r.Code != "" {
		s += " " + r.Code
	}
	return s + ": " + r.Hint
}

func (r *Refusal) Unwrap() error { return r.kind }

// Explain returns the Refusal of a response a user can act on, or nil:
// status and code are the response's, detail the service's
// AuthenticationErrorDetail (or ""), mode the mode the request was sent
// with.
//
//   - KeyBasedAuthenticationNotPermitted, to a key or SAS: the account
//     allows no keys; sign in instead (ErrKeyNotPermitted).
//   - AuthorizationPermissionMismatch signed in (and any 403 but a
//     token's from Cosmos DB): the identity lacks svc's data role; the
//     hint names it (ErrRoleMissing).
//   - 401, or 403 AuthenticationFailed or InvalidAuthenticationInfo,
//     signed in: the token was refused, with the service's reason
//     (ErrTokenRejected).
func Explain(status int, code, detail string, mode Mode, svc Service) *Refusal {
	r := &Refusal{Status: status, Code: code}
	switch {
	case code == "KeyBasedAuthenticationNotPermitted":
		r.kind = ErrKeyNotPermitted
		r.Hint = "the account allows no shared key, nor SAS tokens signed with one: sign in with Microsoft Entra ID instead: " +
			"give the bare endpoint, with no key or SAS, and --auth login (docs/operating.md, Signing in to Azure)"
	case mode != Login:
		return nil
	case status == http.StatusUnauthorized, code == "AuthenticationFailed", code == "InvalidAuthenticationInfo":
		r.kind = ErrTokenRejected
		r.Hint = "the service refused the Microsoft Entra token"
		if detail != "" {
			r.Hint += " (" + RedactTokens(firstLine(detail)) + ")"
		}
		r.Hint += ": check that the identity belongs to the account's tenant and that the clock is right"
	case code == "AuthorizationPermissionMismatch", status == http.StatusForbidden && svc == CosmosTables:
		r.kind = ErrRoleMissing
		r.Hint = fmt.Sprintf("the signed-in identity may not do this: grant it the role %q %s", svc.Role(), svc.scope())
	default:
		return nil
	}
	return r
}

// ExplainError is Explain for an SDK error: if err holds an
// *azcore.ResponseError that Explain explains, it returns an error whose
// message is the Refusal's and which unwraps to the Refusal and err;
// else err with ExplainTLS's advice if it is a TLS error of an untrusted CA,
// or err itself.
func ExplainError(err error, mode Mode, svc Service) error {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return ExplainTLS(err)
	}
	detail := ""
	if re.RawResponse != nil {
		if body, berr := runtime.Payload(re.RawResponse); berr == nil {
			detail = authDetail(body)
		}
	}
	r := Explain(re.StatusCode, re.ErrorCode, detail, mode, svc)
	if r == nil {
		return err
	}
	return &explained{r: r, err: err}
}

type explained struct {
	r   *Refusal
	err error
}

func (e *explained) Error() string   { return e.r.Error() }
func (e *explained) Unwrap() []error { return []error{e.r, e.err} }

// detailPattern finds AuthenticationErrorDetail in an error body: the
// JSON field of the table service or the XML element of the blob service.
var detailPattern = regexp.MustCompile(`"?AuthenticationErrorDetail"?\s*[:>]\s*"?([^"<]*)`)

// authDetail returns the AuthenticationErrorDetail of an error body, or "".
func authDetail(body []byte) string {
	m := detailPattern.FindSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}

// AuthDetail is authDetail for a table service's JSON error body.
func AuthDetail(body []byte) string { return authDetail(body) }

// jwtPattern matches a JSON Web Token: three base64url parts, the first
// two of JSON objects ("eyJ").
var jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`)

// RedactTokens replaces anything shaped like a JWT (an Entra access
// token) in s with ***.
func RedactTokens(s string) string { return jwtPattern.ReplaceAllString(s, "***") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

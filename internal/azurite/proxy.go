package azurite

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// Refusal is an answer of Azure proper that Azurite never gives: the
// status, error code and message of a storage account that allows no
// shared keys, or of an identity without the role for the request.
type Refusal struct {
	Status  int
	Code    string
	Message string
}

// The refusals of Azure Storage for a key-based request to an account
// with AllowSharedKeyAccess=false, and for a signed-in identity whose
// roles do not allow the request.
var (
	KeyBasedAuthenticationNotPermitted = Refusal{http.StatusForbidden, "KeyBasedAuthenticationNotPermitted", "Key based authentication is not permitted on this storage account."}
	AuthorizationPermissionMismatch    = Refusal{http.StatusForbidden, "AuthorizationPermissionMismatch", "This request is not authorized to perform this operation using this permission."}
)

// RefusingProxy starts a reverse proxy on loopback in front of s that
// answers the requests refuse picks (a non-nil Refusal) as Azure would,
// in the table service's JSON or the blob service's XML, and passes the
// others to s. It serves HTTPS with s's certificate when s is an OAuth
// server, else HTTP. It returns the service URL of s's account through
// the proxy, and is closed when the test ends.
func (s *Server) RefusingProxy(t testing.TB, refuse func(*http.Request) *Refusal) string {
	t.Helper()
	target, err := url.Parse(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	account := target.Path
	target.Path = ""
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = s.tls.transport()
	if rp.Transport == nil {
		rp.Transport = http.DefaultTransport
	}
	ps := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rf := refuse(r); rf != nil {
			s.writeRefusal(w, *rf)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	if s.tls != nil {
		cert, err := tls.LoadX509KeyPair(s.tls.certFile, s.tls.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		ps.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ps.StartTLS()
	} else {
		ps.Start()
	}
	t.Cleanup(ps.Close)
	return ps.URL + account
}

// writeRefusal answers as the service would.
func (s *Server) writeRefusal(w http.ResponseWriter, rf Refusal) {
	msg := rf.Message + "\nRequestId:00000000-0000-0000-0000-000000000000\nTime:2026-11-27T00:00:00.0000000Z"
	w.Header().Set("x-ms-error-code", rf.Code)
	if s.service == "blob" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(rf.Status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, html.EscapeString(rf.Code), html.EscapeString(msg))
		return
	}
	w.Header().Set("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
	w.WriteHeader(rf.Status)
	json.NewEncoder(w).Encode(map[string]any{"odata.error": map[string]any{
		"code": rf.Code, "message": map[string]string{"lang": "en-US", "value": msg},
	}})
}

package azauth

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/google/uuid"

	"github.com/tablejournal/tablejournal/internal/azurite"
)

func TestParseMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"", Auto, true}, {"key", Key, true}, {"SAS", SAS, true}, {" login ", Login, true},
		{"token", "", false}, {"msi", "", false},
	} {
		got, err := ParseMode(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrMode) {
			t.Errorf("ParseMode(%q): %v is not ErrMode", tc.in, err)
		}
	}
}

func TestChoose(t *testing.T) {
	const https, http = "https://acct.table.core.windows.net", "http://127.0.0.1:10002/devstoreaccount1"
	for _, tc := range []struct {
		mode           Mode
		endpoint       string
		hasKey, hasSAS bool
		want           Mode
		err            error
	}{
		{Auto, https, true, false, Key, nil},
		{Auto, https, false, true, SAS, nil},
		{Auto, https, false, false, Login, nil},
		{Auto, http, true, false, Key, nil},
		{Auto, http, false, false, "", ErrLoginOverHTTP},
		{Login, http, false, false, "", ErrLoginOverHTTP},
		{Login, https, true, false, "", ErrMode},
		{Login, https + "/?sv=x", false, true, "", ErrMode},
		{Key, https, false, true, "", ErrMode},
		{SAS, https, true, false, "", ErrMode},
		{Key, http, true, false, Key, nil},
	} {
		got, err := Config{Mode: tc.mode}.Choose(tc.endpoint, tc.hasKey, tc.hasSAS)
		if got != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("Choose(%q, %s, key %v, sas %v) = %q, %v; want %q, %v", tc.mode, tc.endpoint, tc.hasKey, tc.hasSAS, got, err, tc.want, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "sv=x") {
			t.Errorf("the error shows the SAS: %v", err)
		}
	}
}

// TestChooseAdviceHolds: the endpoint --auth login with a key or SAS
// advises is one Choose then accepts for signing in; before, a key
// connection string to http://… was told to "give the endpoint alone, as
// http://…", which is then refused as login over http.
func TestChooseAdviceHolds(t *testing.T) {
	for _, endpoint := range []string{"https://acct.table.core.windows.net", "http://127.0.0.1:10002/devstoreaccount1"} {
		_, err := Config{Mode: Login}.Choose(endpoint, true, false)
		if !errors.Is(err, ErrMode) {
			t.Fatalf("login with a key at %s: %v, want ErrMode", endpoint, err)
		}
		msg := err.Error()
		if i := strings.Index(msg, "as http://"); i >= 0 {
			t.Errorf("advises a plain http endpoint, which login refuses: %v", err)
		}
		if i := strings.Index(msg, "as https://"); i >= 0 {
			advised := strings.Fields(msg[i+3:])[0]
			if m, err := (Config{Mode: Login}).Choose(advised, false, false); err != nil || m != Login {
				t.Errorf("the advised endpoint %s is refused: %v", advised, err)
			}
		} else if !strings.Contains(msg, "https://") || !strings.Contains(msg, "leave out --auth login") {
			t.Errorf("login with a key at %s: %v; want advice to use https or the key", endpoint, err)
		}
	}
}

// TestTransport: a server behind a private CA is reached through
// CAFile, and through SSL_CERT_FILE; without either, Transport is the
// SDK's own (nil); a file with no certificate is refused.
func TestTransport(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused on purpose
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(tr policy.Transporter) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	t.Setenv(EnvSSLCertFile, "")
	if tr, err := (Config{}).Transport(); tr != nil || err != nil {
		t.Fatalf("Transport() with no CA file = %v, %v; want the SDK's (nil)", tr, err)
	}
	if err := get(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}); err == nil {
		t.Fatal("the test server is trusted without its CA: the test proves nothing")
	}
	tr, err := Config{CAFile: ca}.Transport()
	if err != nil || get(tr) != nil {
		t.Fatalf("through CAFile: %v, %v", err, get(tr))
	}
	t.Setenv(EnvSSLCertFile, ca)
	tr, err = Config{}.Transport()
	if err != nil || get(tr) != nil {
		t.Fatalf("through SSL_CERT_FILE: %v", err)
	}
	t.Setenv(EnvSSLCertFile, "")
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{empty, filepath.Join(t.TempDir(), "missing.pem")} {
		if _, err := (Config{CAFile: f}).Transport(); !errors.Is(err, ErrCAFile) || !strings.Contains(err.Error(), f) {
			t.Errorf("CAFile %s: %v; want ErrCAFile naming the file", f, err)
		}
	}
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		status       int
		code, detail string
		mode         Mode
		svc          Service
		kind         error
		says         string
	}{
		{403, "KeyBasedAuthenticationNotPermitted", "", Key, Tables, ErrKeyNotPermitted, "--auth login"},
		{403, "KeyBasedAuthenticationNotPermitted", "", SAS, Blobs, ErrKeyNotPermitted, "sign in with Microsoft Entra ID"},
		{403, "AuthorizationPermissionMismatch", "", Login, Tables, ErrRoleMissing, `"Storage Table Data Contributor"`},
		{403, "AuthorizationPermissionMismatch", "", Login, Blobs, ErrRoleMissing, `"Storage Blob Data Contributor"`},
		{403, "Forbidden", "", Login, CosmosTables, ErrRoleMissing, `"Cosmos DB Built-in Data Contributor"`},
		{401, "InvalidAuthenticationInfo", "Lifetime validation failed. The token is expired.", Login, Tables, ErrTokenRejected, "The token is expired"},
		{403, "AuthenticationFailed", "Invalid token audience.", Login, Blobs, ErrTokenRejected, "Invalid token audience"},
		{403, "AuthenticationFailed", "eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJ4In0.c2ln is bad", Login, Tables, ErrTokenRejected, "(*** is bad)"},
		// A SAS without a permission is not a missing role.
		{403, "AuthorizationPermissionMismatch", "", SAS, Tables, nil, ""},
		{403, "AuthenticationFailed", "", Key, Tables, nil, ""},
		{404, "ResourceNotFound", "", Login, Tables, nil, ""},
	} {
		r := Explain(tc.status, tc.code, tc.detail, tc.mode, tc.svc)
		if tc.kind == nil {
			if r != nil {
				t.Errorf("Explain(%d %s, %s) = %v; want nil", tc.status, tc.code, tc.mode, r)
			}
			continue
		}
		if r == nil || !errors.Is(r, tc.kind) || !strings.Contains(r.Error(), tc.says) {
			t.Errorf("Explain(%d %s, %s) = %v; want %v saying %s", tc.status, tc.code, tc.mode, r, tc.kind, tc.says)
		}
	}
}

// TestDefaultCredentialNoIdentity: the default chain, narrowed to the
// environment credential with nothing in the environment, finds no
// identity and says which source it tried and what each needs.
func TestDefaultCredentialNoIdentity(t *testing.T) {
	azurite.Confine(t, map[string]string{"AZURE_TOKEN_CREDENTIALS": "EnvironmentCredential"})
	cred, err := Config{}.TokenCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
	if !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("GetToken: %v; want ErrNoIdentity", err)
	}
	for _, want := range []string{"EnvironmentCredential", "AZURE_TENANT_ID", "managed identity", "az login", "--auth key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %s: %v", want, err)
		}
	}
}

// TestDefaultCredentialManagedIdentity: the default chain, narrowed to
// the managed identity credential and pointed at an App Service style
// identity endpoint on loopback, signs in as the user-assigned identity
// AZURE_CLIENT_ID names: the token is the endpoint's.
func TestDefaultCredentialManagedIdentity(t *testing.T) {
	src := &azurite.Credential{}
	ep, err := azurite.StartIdentityEndpoint(src, uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	azurite.Confine(t, ep.Env())
	cred, err := Config{}.TokenCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A resource of its own: MSAL caches managed identity tokens per
	// process, by resource.
	scope := fmt.Sprintf("https://t%d.table.core.windows.net/.default", time.Now().UnixNano())
	tok, err := cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{scope}})
	if err != nil {
		t.Fatal(err)
	}
	minted := src.Tokens()
	if len(minted) != 1 || tok.Token != minted[0] {
		t.Fatalf("got a token the endpoint did not mint (%d minted)", len(minted))
	}
}

// TestGivenCredentialFails: a caller's credential that fails is
// ErrSignIn, with its message and no token.
func TestGivenCredentialFails(t *testing.T) {
	cred, err := Config{Credential: failing{}}.TokenCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
	if !errors.Is(err, ErrSignIn) || !strings.Contains(err.Error(), "tenant not found") || strings.Contains(err.Error(), "eyJ") {
		t.Fatalf("GetToken: %v; want ErrSignIn with the cause, no token", err)
	}
}

type failing struct{}

func (failing) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{}, errors.New("tenant not found; stray token eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJ4In0.c2ln")
}

// TestTokenEndpointUnknownCA: a token request to an identity endpoint
// whose certificate no trusted CA signed (here a client secret
// credential whose authority is a loopback TLS server) fails with
// ErrUnknownCA advising --ca-file, not a sign-in error that blames the
// identity's settings.
func TestTokenEndpointUnknownCA(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a request passed the handshake")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused on purpose
	srv.StartTLS()
	defer srv.Close()
	t.Setenv(EnvSSLCertFile, "")
	opts := &azidentity.ClientSecretCredentialOptions{DisableInstanceDiscovery: true}
	opts.Cloud.ActiveDirectoryAuthorityHost = srv.URL + "/"
	opts.Retry.MaxRetries = -1
	sp, err := azidentity.NewClientSecretCredential(uuid.NewString(), uuid.NewString(), "s3cret-value", opts)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := Config{Credential: sp}.TokenCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cred.GetToken(t.Context(), policy.TokenRequestOptions{Scopes: []string{"https://storage.azure.com/.default"}})
	if !errors.Is(err, ErrUnknownCA) || !strings.Contains(err.Error(), "--ca-file") || errors.Is(err, ErrSignIn) {
		t.Fatalf("GetToken behind an untrusted CA: %v; want ErrUnknownCA advising --ca-file", err)
	}
	if strings.Contains(err.Error(), "s3cret-value") {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

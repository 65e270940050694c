package azurite

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/golang-jwt/jwt/v5"
)

// Tenant is the tenant of the tokens a Credential mints.
const Tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"

// Credential is an azcore.TokenCredential whose tokens an OAuth server
// accepts: JWTs as Microsoft Entra ID issues them (issuer
// https://sts.windows.net/<Tenant>/, audience the resource of the
// requested scope, valid for an hour), signed with a random key, since
// Azurite checks issuer, audience and lifetime but not the signature.
// It contacts nothing. The zero Credential is ready; it is safe for
// concurrent use.
type Credential struct {
	// Audience, if set, is every token's audience instead of the scope's.
	Audience string
	// Expired makes tokens that expired an hour ago, though the
	// credential reports them valid, so that the client sends them.
	Expired bool

	mu     sync.Mutex
	key    []byte
	tokens []string
}

// GetToken implements azcore.TokenCredential.
func (c *Credential) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if len(opts.Scopes) != 1 {
		return azcore.AccessToken{}, errors.New("azurite: want one scope")
	}
	aud := c.Audience
	if aud == "" {
		aud = strings.TrimSuffix(opts.Scopes[0], "/.default")
	}
	tok, exp, err := c.Mint(aud)
	if err != nil {
		return azcore.AccessToken{}, err
	}
	if c.Expired {
		exp = time.Now().Add(time.Hour)
	}
	return azcore.AccessToken{Token: tok, ExpiresOn: exp}, nil
}

// Mint returns a token for the audience and its expiry, as GetToken.
func (c *Credential) Mint(aud string) (string, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == nil {
		c.key = make([]byte, 32)
		if _, err := rand.Read(c.key); err != nil {
			return "", time.Time{}, err
		}
	}
	now := time.Now()
	iat, exp := now.Add(-5*time.Minute), now.Add(time.Hour)
	if c.Expired {
		iat, exp = now.Add(-2*time.Hour), now.Add(-time.Hour)
	}
	claims := jwt.MapClaims{
		"aud": aud,
		"iss": "https://sts.windows.net/" + Tenant + "/",
		"iat": iat.Unix(), "nbf": iat.Unix(), "exp": exp.Unix(),
		"tid": Tenant, "oid": "00000000-0000-0000-0000-00000000a11c", "appid": "tablejournal-tests",
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(c.key)
	if err != nil {
		return "", time.Time{}, err
	}
	c.tokens = append(c.tokens, tok)
	return tok, exp, nil
}

// Tokens returns every token minted so far, for tests that check none
// leaks into an error or a log.
func (c *Credential) Tokens() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

// IdentityEndpoint is a managed identity endpoint on loopback, speaking
// the protocol of App Service's (GET IDENTITY_ENDPOINT?resource=…, with
// the secret IDENTITY_HEADER in X-IDENTITY-HEADER), that hands out the
// tokens of a Credential. With its Env, azidentity's
// DefaultAzureCredential narrowed to ManagedIdentityCredential signs in
// against an OAuth server without leaving 127.0.0.1: the default chain,
// confined.
type IdentityEndpoint struct {
	srv      *http.Server
	ln       net.Listener
	header   string
	cred     *Credential
	clientID string
}

// StartIdentityEndpoint serves cred's tokens on a free loopback port
// until Close. With a clientID it serves the user-assigned identity of
// that client ID only (AZURE_CLIENT_ID in Env); tokens of managed
// identities are cached per process by identity and resource, so a test
// that must see its own tokens minted gives a fresh one.
func StartIdentityEndpoint(cred *Credential, clientID string) (*IdentityEndpoint, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &IdentityEndpoint{ln: ln, header: hex.EncodeToString(secret), cred: cred, clientID: clientID}
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	go e.srv.Serve(ln)
	return e, nil
}

// URL is the endpoint's token URL, the value of IDENTITY_ENDPOINT.
func (e *IdentityEndpoint) URL() string { return "http://" + e.ln.Addr().String() + "/msi/token" }

// Env is the environment that points a managed identity credential at
// the endpoint, and narrows DefaultAzureCredential to it:
// IDENTITY_ENDPOINT, IDENTITY_HEADER, AZURE_TOKEN_CREDENTIALS, and
// AZURE_CLIENT_ID for a user-assigned identity.
func (e *IdentityEndpoint) Env() map[string]string {
	env := map[string]string{
		"IDENTITY_ENDPOINT":       e.URL(),
		"IDENTITY_HEADER":         e.header,
		"AZURE_TOKEN_CREDENTIALS": "ManagedIdentityCredential",
	}
	if e.clientID != "" {
		env["AZURE_CLIENT_ID"] = e.clientID
	}
	return env
}

// Close stops the endpoint.
func (e *IdentityEndpoint) Close() error { return e.srv.Close() }

func (e *IdentityEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-IDENTITY-HEADER")), []byte(e.header)) != 1 {
		http.Error(w, `{"error":"invalid_request","error_description":"missing or wrong X-IDENTITY-HEADER"}`, http.StatusUnauthorized)
		return
	}
	if got := r.URL.Query().Get("client_id"); got != e.clientID {
		http.Error(w, `{"error":"invalid_request","error_description":"no identity of this client_id is assigned to this resource"}`, http.StatusBadRequest)
		return
	}
	resource := r.URL.Query().Get("resource")
	if resource == "" {
		http.Error(w, `{"error":"invalid_request","error_description":"no resource"}`, http.StatusBadRequest)
		return
	}
	tok, err := e.cred.GetToken(r.Context(), policy.TokenRequestOptions{Scopes: []string{resource + "/.default"}})
	if err != nil {
		http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"access_token": tok.Token,
		"expires_on":   strconv.FormatInt(tok.ExpiresOn.Unix(), 10),
		"resource":     resource,
		"token_type":   "Bearer",
	})
}

// credentialEnv are the variables through which azidentity's
// DefaultAzureCredential finds an identity.
var credentialEnv = []string{
	"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
	"AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_USERNAME", "AZURE_PASSWORD", "AZURE_FEDERATED_TOKEN_FILE",
	"AZURE_AUTHORITY_HOST", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT",
	"MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT", "AZURE_TOKEN_CREDENTIALS",
}

// Confine removes from the environment, for the rest of the test, every
// variable through which DefaultAzureCredential finds an identity, then
// sets env, which must narrow the chain with AZURE_TOKEN_CREDENTIALS:
// the whole chain would run the Azure CLI and probe the instance
// metadata service at 169.254.169.254, off loopback. The test must not
// be parallel (t.Setenv).
func Confine(t testing.TB, env map[string]string) {
	t.Helper()
	if env["AZURE_TOKEN_CREDENTIALS"] == "" {
		t.Fatal("azurite.Confine needs AZURE_TOKEN_CREDENTIALS to narrow the chain")
	}
	for _, k := range credentialEnv {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

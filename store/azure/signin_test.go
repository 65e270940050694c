package azure

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// oauthServer returns the test Azurite's OAuth sibling: HTTPS, only
// bearer tokens accepted.
func oauthServer(t testing.TB) *azurite.Server {
	t.Helper()
	o, err := srv.OAuth(bg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// newSignedInStore returns a Store signed in to the OAuth Azurite with
// cred, given no key, trusting its certificate through Auth.CAFile.
func newSignedInStore(t testing.TB, cred *azurite.Credential) *Store {
	t.Helper()
	o := oauthServer(t)
	s, err := New(Config{Endpoint: o.Endpoint(), Credential: cred, CAFile: o.CAFile(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != azauth.Login {
		t.Fatalf("a bare endpoint's mode is %q, want login", s.Mode())
	}
	return s
}

// TestConformanceSignedIn runs the suite against Azurite in OAuth mode,
// signed in: the backend as a user with shared keys disabled runs it.
func TestConformanceSignedIn(t *testing.T) {
	t.Parallel()
	cred := &azurite.Credential{}
	storetest.Run(t, func(t *testing.T) store.Store { return newSignedInStore(t, cred) }, azuriteQuirks)
}

// TestSignInRefused: a token the service refuses (expired, for another
// audience) fails with ErrTokenRejected and the service's reason, and
// signing in over http:// is refused before any request. No error
// carries a token.
func TestSignInRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		cred       *azurite.Credential
	}{
		{"expired", "Lifetime validation failed. The token is expired.", &azurite.Credential{Expired: true}},
		{"audience", "Invalid token audience.", &azurite.Credential{Audience: "https://vault.azure.net"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSignedInStore(t, tc.cred)
			err := s.CreateTable(bg, "refused"+tc.name)
			if !errors.Is(err, azauth.ErrTokenRejected) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateTable: %v; want ErrTokenRejected saying %q", err, tc.want)
			}
			t.Log(err)
			noToken(t, err.Error(), tc.cred)
		})
	}
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []Config{
			{Endpoint: srv.Endpoint(), Credential: &azurite.Credential{}},
			{Endpoint: srv.Endpoint(), Auth: "login", Credential: &azurite.Credential{}},
		} {
			_, err := New(cfg)
			if !errors.Is(err, azauth.ErrLoginOverHTTP) || !strings.Contains(err.Error(), "plain http") {
				t.Errorf("New(%s, %q): %v; want ErrLoginOverHTTP", cfg.Endpoint, cfg.Auth, err)
			}
		}
	})
}

// TestRefusalsExplained: the two refusals Azurite cannot give, from a
// proxy in front of it as Azure would give them, say what to do. An
// account that allows no shared key refuses the key: sign in instead.
// An identity with a reader's role may read but not write: the error
// names the role to grant.
func TestRefusalsExplained(t *testing.T) {
	t.Parallel()
	t.Run("key not permitted", func(t *testing.T) {
		t.Parallel()
		ep := srv.RefusingProxy(t, func(r *http.Request) *azurite.Refusal {
			if strings.HasPrefix(r.Header.Get("Authorization"), "SharedKey") {
				return &azurite.KeyBasedAuthenticationNotPermitted
			}
			return nil
		})
		s, err := New(Config{ConnectionString: "AccountName=" + azurite.AccountName + ";AccountKey=" + azurite.AccountKey + ";TableEndpoint=" + ep, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = s.CreateTable(bg, "keyrefused")
		if !errors.Is(err, azauth.ErrKeyNotPermitted) || !strings.Contains(err.Error(), "--auth login") {
			t.Fatalf("CreateTable with a key: %v; want ErrKeyNotPermitted saying --auth login", err)
		}
		if strings.Contains(err.Error(), azurite.AccountKey) {
			t.Fatalf("the error quotes the key: %v", err)
		}
		t.Log(err)
	})
	t.Run("role missing", func(t *testing.T) {
		t.Parallel()
		o := oauthServer(t)
		reader := o.RefusingProxy(t, func(r *http.Request) *azurite.Refusal {
			if r.Method != http.MethodGet {
				return &azurite.AuthorizationPermissionMismatch
			}
			return nil
		})
		cred := &azurite.Credential{}
		owner := newSignedInStore(t, cred)
		name := table(t, owner)
		if _, err := owner.Transact(bg, name, "p", []store.Op{{Kind: store.Insert, RK: "r", Props: edm.Entity{"n": edm.Int32(1)}}}); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Endpoint: reader, Credential: cred, CAFile: o.CAFile(), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(bg, name, "p", "r"); err != nil {
			t.Fatalf("a reader's Get: %v", err)
		}
		_, err = s.Transact(bg, name, "p", []store.Op{{Kind: store.Delete, RK: "r"}})
		if !errors.Is(err, azauth.ErrRoleMissing) || !strings.Contains(err.Error(), `"Storage Table Data Contributor"`) {
			t.Fatalf("a reader's write: %v; want ErrRoleMissing naming Storage Table Data Contributor", err)
		}
		t.Log(err)
		noToken(t, err.Error(), cred)
	})
}

// noToken fails if msg holds any token cred minted.
func noToken(t *testing.T, msg string, cred *azurite.Credential) {
	t.Helper()
	toks := cred.Tokens()
	if len(toks) == 0 {
		t.Fatal("the credential minted no token: the request was never signed in")
	}
	for _, tok := range toks {
		if strings.Contains(msg, tok) {
			t.Fatalf("a token leaked into %q", msg)
		}
	}
}

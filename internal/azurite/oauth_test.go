package azurite

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestOAuth starts a server in OAuth mode: a token of the Credential
// gets in over HTTPS; the development account's key, an expired token
// and a token for another audience do not.
func TestOAuth(t *testing.T) {
	// Each start has its own deadline (60 s): on a loaded machine the
	// three servers may take most of it each.
	plain, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	s, err := plain.OAuth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Endpoint(), "https://127.0.0.1:") || !strings.HasSuffix(s.Endpoint(), "/"+OAuthAccount) {
		t.Fatalf("endpoint %s", s.Endpoint())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool()}}},
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}}
	for _, tc := range []struct {
		name string
		cred *Credential
		ok   bool
	}{
		{"valid", &Credential{}, true},
		{"expired", &Credential{Expired: true}, false},
		{"audience", &Credential{Audience: "https://vault.azure.net"}, false},
	} {
		c, err := aztables.NewServiceClient(s.Endpoint(), tc.cred, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateTable(ctx, "t"+tc.name, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CreateTable: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	key, err := aztables.NewSharedKeyCredential(AccountName, AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := aztables.NewServiceClientWithSharedKey(strings.Replace(s.Endpoint(), OAuthAccount, AccountName, 1), key, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, "tkey", nil); err == nil {
		t.Error("the development account's key got in")
	}
	blob, err := s.BlobEndpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(blob, "https://127.0.0.1:") {
		t.Errorf("blob endpoint %s", blob)
	}
	if err := plain.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := opts.Transport.(*http.Client).Get(s.Endpoint() + "/Tables"); err == nil {
		t.Error("the OAuth server still answers after its parent's Stop")
	}
}

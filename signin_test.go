package tablejournal_test

import (
	"context"
	"testing"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

// TestSignedInClient: a Client reads an Azure table store signed in with
// the credential its store is given (store/azure's Config.Credential,
// passed with WithStore), from Azurite in OAuth mode whose account key it
// never has; the certificate is trusted through SSL_CERT_FILE. The
// projector beside it signs in with the default chain, confined to an
// identity endpoint on loopback.
func TestSignedInClient(t *testing.T) {
	// Not parallel: it sets environment variables.
	ctx := testContext(t)
	az, err := azurite.StartOAuth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Stop() })
	ep, err := azurite.StartIdentityEndpoint(&azurite.Credential{}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	azurite.Confine(t, ep.Env())
	t.Setenv("SSL_CERT_FILE", az.CAFile())

	p := tablejournaltest.New(t, az.Endpoint())
	own := &azurite.Credential{}
	st, err := azure.New(azure.Config{Endpoint: az.Endpoint(), Credential: own})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tj.Connect(ctx, p.URL(), tj.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out, err := c.Apply(ctx, tj.NewCommand("orders", "customer-42").Upsert("order-7", tj.Entity{"total": tj.Int64(42)}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Get(ctx, "orders", "customer-42", "order-7", tj.AfterSeq(out.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Entity["total"].Equal(tj.Int64(42)) {
		t.Fatalf("read %v", r.Entity)
	}
	if len(own.Tokens()) == 0 {
		t.Fatal("the client read without the credential it was given")
	}
}

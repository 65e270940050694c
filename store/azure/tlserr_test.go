package azure

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/internal/azauth"
)

// TestUnknownCAAdvisesCAFile: an https endpoint whose certificate no
// trusted CA signed (a private endpoint, an HTTPS emulator) fails with
// azauth.ErrUnknownCA and an error that says to give --ca-file; before,
// it was Go's bare "certificate signed by unknown authority".
func TestUnknownCAAdvisesCAFile(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("a request passed the handshake")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused on purpose
	srv.StartTLS()
	defer srv.Close()
	t.Setenv(azauth.EnvSSLCertFile, "")
	s, err := New(Config{
		ConnectionString: "DefaultEndpointsProtocol=https;AccountName=devstoreaccount1;AccountKey=" + devAccountKey +
			";TableEndpoint=" + srv.URL + "/devstoreaccount1",
		RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond, MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = s.CreateTable(ctx, "orders")
	if !errors.Is(err, azauth.ErrUnknownCA) || !strings.Contains(err.Error(), "--ca-file") {
		t.Fatalf("CreateTable behind an untrusted CA: %v; want ErrUnknownCA advising --ca-file", err)
	}
	if strings.Contains(err.Error(), devAccountKey) {
		t.Fatalf("the error shows the key: %v", err)
	}
}

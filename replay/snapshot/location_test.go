package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/internal/azurite"
)

// payload returns n pseudo-random bytes.
func payload(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// write writes data to w in uneven pieces, as a snapshot does.
func write(t *testing.T, w Writer, data []byte) {
	t.Helper()
	for len(data) > 0 {
		n := min(len(data), 100_000+len(data)%77)
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
}

func readAll(t *testing.T, ctx context.Context, loc, tables string) []byte {
	t.Helper()
	r, err := Open(ctx, loc, tables, azauth.Config{})
	if err != nil {
		t.Fatalf("open %s: %v", Describe(loc), err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBlob writes snapshots to Azurite's blob service and reads them back:
// by azblob:// against the connection string's account (the container
// created on the way), in several blocks, and by a URL with a SAS token;
// an aborted upload leaves no blob.
func TestBlob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tables, err := AzuriteOfTest().BlobConnectionString(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := payload(2*BlockSize + 12345) // three blocks
	loc := "azblob://snapshots/orders/2026-11-21.tjsnap"
	w, err := Create(ctx, loc, tables, azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, data)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, loc, tables); sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("read back %d bytes, wrote %d, contents differ", len(got), len(data))
	}

	// Aborted: no blob.
	aborted := "azblob://snapshots/aborted.tjsnap"
	w, err = Create(ctx, aborted, tables, azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, data[:BlockSize+1])
	w.Abort(errors.New("the snapshot failed"))
	if _, err := Open(ctx, aborted, tables, azauth.Config{}); !bloberror.HasCode(err, bloberror.BlobNotFound) {
		t.Fatalf("open an aborted blob: %v, want BlobNotFound", err)
	}

	// A URL with a SAS token, signed with the account's key.
	acct, err := accountOf(tables)
	if err != nil {
		t.Fatal(err)
	}
	bb, _, _, err := acct.clients("snapshots", "by-sas.tjsnap", azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sasURL, err := bb.GetSASURL(sas.BlobPermissions{Read: true, Write: true, Create: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := Describe(sasURL); strings.Contains(d, "sig=") || !strings.HasSuffix(d, "/snapshots/by-sas.tjsnap") {
		t.Fatalf("Describe shows %q", d)
	}
	small := payload(1000)
	w, err = Create(ctx, sasURL, "", azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, small)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, sasURL, ""); !bytes.Equal(got, small) {
		t.Fatalf("read by SAS: %d bytes", len(got))
	}
	if got := readAll(t, ctx, "azblob://snapshots/by-sas.tjsnap", tables); !bytes.Equal(got, small) {
		t.Fatalf("the SAS upload read by name: %d bytes", len(got))
	}
}

func TestLocalFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.tjsnap")
	w, err := Create(ctx, path, "", azauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, payload(300_000))
	w.Abort(errors.New("failed"))
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 0 {
		t.Fatalf("an aborted file left %v", ents)
	}
	if w, err = Create(ctx, path, "", azauth.Config{}); err != nil {
		t.Fatal(err)
	}
	write(t, w, payload(300_000))
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ctx, path, ""); !bytes.Equal(got, payload(300_000)) {
		t.Fatal("file contents differ")
	}
}

func TestAccountOf(t *testing.T) {
	tests := []struct {
		tables, endpoint string
		wantErr          bool
	}{
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net", "https://acct.blob.core.windows.net", false},
		{"AccountName=acct;AccountKey=a2V5", "https://acct.blob.core.windows.net", false},
		{"AccountName=acct;SharedAccessSignature=sv=1&sig=x;EndpointSuffix=core.chinacloudapi.cn", "https://acct.blob.core.chinacloudapi.cn", false},
		{"AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/devstoreaccount1;BlobEndpoint=http://127.0.0.1:2/devstoreaccount1/", "http://127.0.0.1:2/devstoreaccount1", false},
		{"UseDevelopmentStorage=true", devBlobURL, false},
		{"AccountName=acct", "", true},
		{"https://acct.table.core.windows.net/?sv=1&sig=secret", "", true},
		{"AccountKey=a2V5;TableEndpoint=http://127.0.0.1:1/x", "", true},
	}
	for _, tt := range tests {
		a, err := accountOf(tt.tables)
		if (err != nil) != tt.wantErr || err == nil && a.endpoint != tt.endpoint {
			t.Errorf("accountOf(%q) = %q, %v", tt.tables, a.endpoint, err)
		}
		if err != nil && (!errors.Is(err, ErrLocation) || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "a2V5")) {
			t.Errorf("accountOf(%q): error %v", tt.tables, err)
		}
	}
}

// TestBlobSignedIn writes and reads a snapshot blob signed in, against
// Azurite's blob service in OAuth mode (HTTPS, no key given): by the
// blob's bare URL. Errors a user can act on: an expired token, an
// identity without the blob role (from a proxy, as Azure answers), a
// bare http:// blob URL; none carries a token.
func TestBlobSignedIn(t *testing.T) {
	// The starts have their own deadlines (60 s each).
	o, err := AzuriteOfTest().OAuth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := o.Blob(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := AzuriteOfTest().Blob(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cred := &azurite.Credential{}
	auth := azauth.Config{Credential: cred, CAFile: o.CAFile()}
	loc := blob.Endpoint() + "/snapshots/orders.tjsnap"
	data := payload(BlockSize + 1) // two blocks
	w, err := Create(ctx, loc, "", auth)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, data)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, loc, "", auth)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back signed in: %d bytes, %v", len(got), err)
	}

	expired := &azurite.Credential{Expired: true}
	_, err = Open(ctx, loc, "", azauth.Config{Credential: expired, CAFile: o.CAFile()})
	if !errors.Is(err, azauth.ErrTokenRejected) || !strings.Contains(err.Error(), "The token is expired") {
		t.Errorf("read with an expired token: %v; want ErrTokenRejected saying it expired", err)
	}
	t.Log(err)
	noToken(t, err, expired)

	reader := blob.RefusingProxy(t, func(r *http.Request) *azurite.Refusal {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return &azurite.AuthorizationPermissionMismatch
		}
		return nil
	})
	w, err = Create(ctx, reader+"/snapshots/refused.tjsnap", "", auth)
	if err == nil {
		write(t, w, data[:1000])
		err = w.Commit()
	}
	if !errors.Is(err, azauth.ErrRoleMissing) || !strings.Contains(err.Error(), `"Storage Blob Data Contributor"`) {
		t.Errorf("a reader's snapshot: %v; want ErrRoleMissing naming Storage Blob Data Contributor", err)
	}
	t.Log(err)
	noToken(t, err, cred)

	// Without the emulator's CA (--ca-file), the error says to give it.
	t.Setenv(azauth.EnvSSLCertFile, "")
	if _, err := Open(ctx, loc, "", azauth.Config{Credential: cred}); !errors.Is(err, azauth.ErrUnknownCA) || !strings.Contains(err.Error(), "--ca-file") {
		t.Errorf("read behind an untrusted CA: %v; want ErrUnknownCA advising --ca-file", err)
	}

	if _, err := Open(ctx, plain.Endpoint()+"/snapshots/orders.tjsnap", "", auth); !errors.Is(err, azauth.ErrLoginOverHTTP) {
		t.Errorf("signing in to an http:// blob: %v; want ErrLoginOverHTTP", err)
	}
}

// TestBlobAccountOfURL: azblob:// against a bare table service URL names
// the blob endpoint of the same storage account, signed in; a Cosmos DB
// or emulator endpoint has none to tell.
func TestBlobAccountOfURL(t *testing.T) {
	for _, tc := range []struct{ tables, want string }{
		{"https://acct.table.core.windows.net", "https://acct.blob.core.windows.net"},
		{"https://acct.table.core.chinacloudapi.cn/", "https://acct.blob.core.chinacloudapi.cn"},
		{"https://acct.table.cosmos.azure.com:443/", ""},
		{"https://127.0.0.1:10002/devstoreaccount1", ""},
	} {
		a, err := accountOf(tc.tables)
		if a.endpoint != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("accountOf(%s) = %q, %v; want %q", tc.tables, a.endpoint, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrLocation) {
			t.Errorf("accountOf(%s): %v, not ErrLocation", tc.tables, err)
		}
	}
}

// noToken fails if err's message holds any token cred minted.
func noToken(t *testing.T, err error, cred *azurite.Credential) {
	t.Helper()
	if err == nil {
		return
	}
	for _, tok := range cred.Tokens() {
		if strings.Contains(err.Error(), tok) {
			t.Fatalf("a token leaked into %q", err)
		}
	}
}

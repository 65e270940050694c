package consoleserve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// testConsole is a console over an empty embedded store, without the
// journal: the TLS tests reach only the authentication in front of every
// page.
func testConsole(t *testing.T, cfg console.Config) *console.Handler {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rp, err := replay.New(ctx, replay.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Replay, cfg.Logger = rp, slog.New(slog.DiscardHandler)
	h, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "console test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}

func TestStartTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	h := testConsole(t, console.Config{Auth: &console.Auth{Token: "tok-1"}})
	f := &Flags{Addr: "127.0.0.1:0", TLSCert: cert, TLSKey: key}
	s, err := Start(context.Background(), f, h, true, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = s.Wait() })
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %s, want https on loopback", s.URL)
	}
	trusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := trusting.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.TLS == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, TLS %v: want 401 over TLS", resp.StatusCode, resp.TLS != nil)
	}
	// Plain HTTP to the TLS port is not served.
	if resp, err := http.Get("http" + strings.TrimPrefix(s.URL, "https")); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("plain HTTP answered %d", resp.StatusCode)
		}
	}
	// A client that does not trust the certificate is refused.
	if _, err := (&http.Client{Timeout: 10 * time.Second}).Get(s.URL); err == nil {
		t.Error("a client without the certificate connected")
	}
}

func TestStartTLSNeedsBoth(t *testing.T) {
	h := testConsole(t, console.Config{})
	for _, f := range []*Flags{{Addr: "127.0.0.1:0", TLSCert: "c.pem"}, {Addr: "127.0.0.1:0", TLSKey: "k.pem"}} {
		if s, err := Start(context.Background(), f, h, false, slog.New(slog.DiscardHandler)); err == nil {
			_ = s.Close()
			t.Errorf("started with cert %q key %q", f.TLSCert, f.TLSKey)
		}
	}
}

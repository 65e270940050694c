package azurite

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// OAuthAccount is the one account of an OAuth server. Its key is random
// and given to no one: only a bearer token gets in.
const OAuthAccount = "signedin"

// tlsFiles are what an OAuth server runs with: a certificate for
// 127.0.0.1, its key, and the account's unused key.
type tlsFiles struct {
	dir               string // holds cert.pem and key.pem; removed by its owner's Stop
	owner             *Server
	certFile, keyFile string
	pool              *x509.CertPool
	accountKey        string
}

// args are Azurite's flags for tf: HTTPS and basic OAuth checks (issuer,
// audience, lifetime; not the signature).
func (tf *tlsFiles) args() []string {
	if tf == nil {
		return nil
	}
	return []string{"--oauth", "basic", "--cert", tf.certFile, "--key", tf.keyFile}
}

// env sets the accounts: OAuthAccount alone, so the development account's
// public key opens nothing.
func (tf *tlsFiles) env() []string {
	if tf == nil {
		return nil
	}
	return []string{"AZURITE_ACCOUNTS=" + OAuthAccount + ":" + tf.accountKey}
}

// transport trusts the certificate; nil (the default) without one.
func (tf *tlsFiles) transport() http.RoundTripper {
	if tf == nil {
		return nil
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tf.pool, MinVersion: tls.VersionTLS12}}
}

// OAuth returns an Azurite table server in OAuth mode beside s: HTTPS with
// a certificate made for 127.0.0.1 (CAFile, CertPool), --oauth basic, and
// one account, OAuthAccount, whose key no client is given. It is started
// on the first call, once per Server, and stopped with s. Its
// BlobEndpoint starts a blob server in the same mode.
func (s *Server) OAuth(ctx context.Context) (*Server, error) {
	s.oauthOnce.Do(func() {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, startTimeout)
			defer cancel()
		}
		s.oauth, s.oauthErr = startOAuth(ctx, s.bin)
	})
	return s.oauth, s.oauthErr
}

// StartOAuth starts an Azurite table server in OAuth mode alone, as
// Server.OAuth starts one beside another; ctx bounds the start only
// (60 s if it has no deadline). The caller stops it.
func StartOAuth(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	return startOAuth(ctx, bin)
}

func startOAuth(ctx context.Context, bin string) (*Server, error) {
	tf, err := newTLSFiles()
	if err != nil {
		return nil, err
	}
	s, err := startService(ctx, bin, "table", tf)
	if err != nil {
		os.RemoveAll(tf.dir)
		return nil, err
	}
	tf.owner = s
	return s, nil
}

// CAFile is the PEM file of an OAuth server's certificate, to trust it
// (--ca-file); "" for a plain server.
func (s *Server) CAFile() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.certFile
}

// CertPool holds an OAuth server's certificate; nil for a plain server.
func (s *Server) CertPool() *x509.CertPool {
	if s.tls == nil {
		return nil
	}
	return s.tls.pool
}

// newTLSFiles makes a self-signed certificate for 127.0.0.1 and localhost
// (its own CA), valid for a day, and a random account key.
func newTLSFiles() (*tlsFiles, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("azurite: certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("azurite: certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "azurite test 127.0.0.1"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("azurite: certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("azurite: certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("azurite: certificate key: %w", err)
	}
	acctKey := make([]byte, 32)
	if _, err := rand.Read(acctKey); err != nil {
		return nil, fmt.Errorf("azurite: account key: %w", err)
	}
	dir, err := os.MkdirTemp("", "azurite-tls-")
	if err != nil {
		return nil, fmt.Errorf("azurite: %w", err)
	}
	tf := &tlsFiles{
		dir:        dir,
		certFile:   filepath.Join(dir, "cert.pem"),
		keyFile:    filepath.Join(dir, "key.pem"),
		pool:       x509.NewCertPool(),
		accountKey: base64.StdEncoding.EncodeToString(acctKey),
	}
	tf.pool.AddCert(cert)
	err = os.WriteFile(tf.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	if err == nil {
		err = os.WriteFile(tf.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("azurite: %w", err)
	}
	return tf, nil
}

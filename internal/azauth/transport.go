package azauth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// EnvSSLCertFile is the standard variable naming a PEM bundle of CAs.
// Go reads it once per process for its system pool; Transport reads it
// again each time, so that a file named after the first TLS connection
// counts too.
const EnvSSLCertFile = "SSL_CERT_FILE"

// Transport returns the HTTP client for Azure requests: nil (the SDK's
// own) when neither CAFile nor SSL_CERT_FILE names a file, else a client
// like the SDK's whose TLS trusts the system's CAs and those of both
// files. Errors name the file, never its content.
func (c Config) Transport() (policy.Transporter, error) {
	files := []string{c.CAFile}
	if f := os.Getenv(EnvSSLCertFile); f != "" {
		files = append(files, f)
	}
	var pool *x509.CertPool
	for _, f := range files {
		if f == "" {
			continue
		}
		if pool == nil {
			var err error
			if pool, err = x509.SystemCertPool(); err != nil {
				pool = x509.NewCertPool()
			}
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrCAFile, f, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w %s: no PEM certificate in it", ErrCAFile, f)
		}
	}
	if pool == nil {
		return nil, nil
	}
	// The SDK's defaults (azcore's default transport): proxy from the
	// environment, HTTP/2, TLS 1.2 at least.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return &http.Client{Transport: t}, nil
}

package azauth

import (
	"crypto/x509"
	"errors"
	"fmt"
)

// ExplainTLS says what to do about a TLS error of an Azure request whose
// server certificate is signed by a CA this machine does not trust (a
// private endpoint, an HTTPS emulator): it returns an error wrapping
// ErrUnknownCA and err that names --ca-file; any other err as it is.
func ExplainTLS(err error) error {
	var ua x509.UnknownAuthorityError
	var pua *x509.UnknownAuthorityError
	if err == nil || !(errors.As(err, &ua) || errors.As(err, &pua)) {
		return err
	}
	return fmt.Errorf("%w: the endpoint's certificate is signed by a CA this machine does not trust; give that CA's PEM file with --ca-file (env TABLEJOURNAL_CA_FILE) or SSL_CERT_FILE: %w", ErrUnknownCA, err)
}

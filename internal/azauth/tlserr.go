package azauth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// ExplainTLS says what to do about a TLS error of an Azure request whose
// server certificate is signed by a CA this machine does not trust (a
// private endpoint, an HTTPS emulator): it returns an error wrapping
// ErrUnknownCA and err that names --ca-file; any other err as it is.
func ExplainTLS(err error) error {
	if !unknownCA(err) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrUnknownCA, adviseCAFile, err)
}

// adviseCAFile is what to do about an untrusted CA.
const adviseCAFile = "the endpoint's certificate is signed by a CA this machine does not trust; give that CA's PEM file with --ca-file (env TABLEJOURNAL_CA_FILE) or SSL_CERT_FILE"

// unknownCA reports whether err is a TLS error of a certificate no
// trusted CA signed: by type, or by Go's message where a library kept
// only the text (MSAL flattens the token endpoint's errors to strings).
func unknownCA(err error) bool {
	var ua x509.UnknownAuthorityError
	var pua *x509.UnknownAuthorityError
	return err != nil && (errors.As(err, &ua) || errors.As(err, &pua) ||
		strings.Contains(err.Error(), (x509.UnknownAuthorityError{}).Error()))
}

package azauth

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Mode is how a client authenticates, named as az storage's --auth-mode
// and tablejournal's --auth flag name them.
type Mode string

const (
	// Auto chooses from the location: its account key, else its SAS
	// token, else signing in.
	Auto Mode = ""
	// Key signs every request with the account key of a connection
	// string.
	Key Mode = "key"
	// SAS sends the shared access signature of the location.
	SAS Mode = "sas"
	// Login signs in with Microsoft Entra ID and sends a bearer token.
	Login Mode = "login"
)

// ParseMode reads an --auth value: key, sas, login, or "" (auto).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case Auto, Key, SAS, Login:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want key, sas or login (or nothing, to choose from the location)", ErrMode, s)
}

// Config is how to authenticate to Azure, the same for the table store
// and the snapshot blobs. The zero Config chooses the mode from each
// location, signs in with DefaultAzureCredential where it signs in, and
// trusts the system's CAs.
type Config struct {
	// Mode forces a mode. If Auto, each location chooses (Choose).
	Mode Mode
	// Credential signs in. If nil, azidentity.NewDefaultAzureCredential
	// (environment, workload identity, managed identity, Azure CLI, in
	// that order; AZURE_CLIENT_ID picks a user-assigned identity and
	// AZURE_TOKEN_CREDENTIALS narrows the chain).
	Credential azcore.TokenCredential
	// CAFile is a PEM file of CA certificates trusted in addition to the
	// system's, for an HTTPS emulator or a private endpoint behind a
	// private CA. The file SSL_CERT_FILE names is trusted too.
	CAFile string
}

// Choose returns the mode for a location whose service endpoint is
// endpoint (scheme and host, maybe a path) and which carries an account
// key (hasKey) or a SAS token (hasSAS). Auto takes the key, else the SAS,
// else signs in. A forced mode must fit: Key needs the key, SAS the SAS,
// and Login a location with neither (an error says to drop it). Signing
// in over http:// fails with ErrLoginOverHTTP.
func (c Config) Choose(endpoint string, hasKey, hasSAS bool) (Mode, error) {
	m := c.Mode
	if m == Auto {
		switch {
		case hasKey:
			m = Key
		case hasSAS:
			m = SAS
		default:
			m = Login
		}
	}
	switch {
	case m == Key && !hasKey:
		return "", fmt.Errorf("%w: --auth key needs an account key: give a connection string with AccountKey", ErrMode)
	case m == SAS && !hasSAS:
		return "", fmt.Errorf("%w: --auth sas needs a SAS token: give a URL with one as its query, or a connection string with SharedAccessSignature", ErrMode)
	case m == Login && (hasKey || hasSAS):
		if u, err := url.Parse(endpoint); err != nil || u.Scheme != "https" {
			// Alone, this endpoint would be refused too: a token is
			// sent only over https.
			return "", fmt.Errorf("%w: --auth login signs in instead of using a key or SAS, and only over https, which %s is not: give the service's https:// endpoint alone (with --ca-file for a private CA), or leave out --auth login to use the key or SAS", ErrMode, bare(endpoint))
		}
		return "", fmt.Errorf("%w: --auth login signs in instead of using a key or SAS: give the endpoint alone, as %s", ErrMode, bare(endpoint))
	case m == Login:
		u, err := url.Parse(endpoint)
		if err != nil || u.Scheme != "https" {
			return "", fmt.Errorf("%w: %s is plain http, where a bearer token would travel in the clear: use its https:// endpoint (with --ca-file for a private CA), or a key or SAS", ErrLoginOverHTTP, bare(endpoint))
		}
	}
	return m, nil
}

// bare is endpoint without query, fragment or user info, fit to show.
func bare(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "(the endpoint)"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

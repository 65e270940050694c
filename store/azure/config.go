package azure

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablejournal/tablejournal/internal/azauth"
)

// Config selects the table service and the client's behaviour. Exactly one
// of ConnectionString and Endpoint is set.
type Config struct {
	// ConnectionString is an Azure Storage, Cosmos DB Table API or Azurite
	// connection string: AccountName with AccountKey or
	// SharedAccessSignature, and TableEndpoint (or DefaultEndpointsProtocol
	// and EndpointSuffix); or UseDevelopmentStorage=true for a local Azurite
	// on its default port.
	ConnectionString string

	// Endpoint is the table service URL, such as
	// https://myaccount.table.core.windows.net. It may carry a SAS token as
	// its query instead of SAS.
	Endpoint string
	// SharedKeyAccount and SharedKey authenticate with the account key.
	SharedKeyAccount string
	SharedKey        string
	// SAS is a shared access signature token (the query string, with or
	// without the leading "?"). Not with SharedKey.
	SAS string

	// MaxRetries is how often a request that failed with 408, 429, 500, 503
	// or 504 or a dropped connection is retried. If zero, 4; negative means
	// never.
	MaxRetries int
	// RetryDelay is the first backoff delay, doubled on every retry, with
	// jitter, up to MaxRetryDelay. If zero, 400 ms and 20 s.
	RetryDelay, MaxRetryDelay time.Duration
	// TryTimeout bounds one HTTP attempt. If zero, 60 s.
	TryTimeout time.Duration

	// Emulator turns on the workarounds for Azurite's known differences
	// (see filter.go). New turns it on by itself when the account is the
	// emulator's devstoreaccount1 or the endpoint is path-style, on an IP
	// address or localhost.
	Emulator bool

	// Cosmos says the service is Azure Cosmos DB for Table, which speaks
	// Azure Tables' API with tighter limits and unsorted query results
	// (docs/cosmos.md): the store then refuses what Cosmos would
	// (Store.Limits, events.CosmosLimits) and lists partitions without
	// relying on key order. store/stores sets it from the endpoint.
	Cosmos bool

	// Auth is how to authenticate, as the commands' --auth: "key" (the
	// connection string's AccountKey, or SharedKey), "sas" (a SAS token)
	// or "login" (signing in with Microsoft Entra ID, over https only).
	// If "", the key, else the SAS, else signing in: an Endpoint with no
	// credential signs in.
	Auth string
	// Credential signs in, such as an azidentity credential. If nil,
	// azidentity.NewDefaultAzureCredential: the environment
	// (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET), workload
	// identity, managed identity (AZURE_CLIENT_ID picks a user-assigned
	// one), the Azure CLI. Unused with a key or SAS.
	Credential azcore.TokenCredential
	// CAFile is a PEM file of CA certificates to trust besides the
	// system's, for a private endpoint or an HTTPS emulator. The file
	// SSL_CERT_FILE names is trusted too.
	CAFile string

	// Transport replaces the HTTP client; for tests. If nil, the SDK's,
	// trusting Auth's CA file if any.
	Transport policy.Transporter
}

// Development storage: the Azurite / Storage Emulator account. Its key is
// public, documented by Microsoft for every emulator install.
const (
	devAccountName = "devstoreaccount1"
	devAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devEndpoint    = "http://127.0.0.1:10002/" + devAccountName
)

func (c *Config) setDefaults() {
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = 400 * time.Millisecond
	}
	if c.MaxRetryDelay == 0 {
		c.MaxRetryDelay = 20 * time.Second
	}
	if c.TryTimeout == 0 {
		c.TryTimeout = 60 * time.Second
	}
}

// Validate reports every problem with c at once. Messages never quote the
// connection string, the key or the SAS.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.ConnectionString != "" && (c.Endpoint != "" || c.SharedKey != "" || c.SharedKeyAccount != "" || c.SAS != ""):
		errs = append(errs, errors.New("set either ConnectionString or Endpoint with a credential, not both"))
	case c.ConnectionString != "":
		if _, err := parseConnectionString(c.ConnectionString); err != nil {
			errs = append(errs, err)
		}
	case c.Endpoint == "":
		errs = append(errs, errors.New("no ConnectionString and no Endpoint"))
	default:
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, errors.New("the Endpoint is not an http(s) URL"))
		} else if u.RawQuery != "" && (c.SAS != "" || c.SharedKey != "") {
			errs = append(errs, errors.New("the Endpoint carries a query (a SAS?) and another credential is set"))
		}
		if c.SharedKey != "" && c.SharedKeyAccount == "" {
			errs = append(errs, errors.New("SharedKey without SharedKeyAccount"))
		}
		if c.SharedKeyAccount != "" && c.SharedKey == "" {
			errs = append(errs, errors.New("SharedKeyAccount without SharedKey"))
		}
		if c.SharedKey != "" && c.SAS != "" {
			errs = append(errs, errors.New("both SharedKey and SAS set"))
		}
	}
	if _, err := azauth.ParseMode(c.Auth); err != nil {
		errs = append(errs, err)
	}
	if c.MaxRetryDelay > 0 && c.RetryDelay > c.MaxRetryDelay {
		errs = append(errs, errors.New("RetryDelay above MaxRetryDelay"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("azure: config: %w", err)
	}
	return nil
}

// auth is the authentication part of a validated Config.
func (c Config) auth() azauth.Config {
	m, _ := azauth.ParseMode(c.Auth)
	return azauth.Config{Mode: m, Credential: c.Credential, CAFile: c.CAFile}
}

// account is a resolved configuration: where the service is and how to
// authenticate to it.
type account struct {
	endpoint string // without query
	name     string // account name, when known
	key      string // shared key, or ""
	sas      string // SAS query without "?", or ""
	local    bool   // a path-style endpoint on an IP or localhost: an emulator
}

// resolve turns a validated Config into an account.
func (c Config) resolve() (account, error) {
	if c.ConnectionString != "" {
		return parseConnectionString(c.ConnectionString)
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return account{}, errors.New("azure: Endpoint is not a URL")
	}
	a := account{name: c.SharedKeyAccount, key: c.SharedKey, sas: strings.TrimPrefix(c.SAS, "?")}
	if u.RawQuery != "" {
		a.sas = u.RawQuery
	}
	u.RawQuery, u.Fragment = "", ""
	a.endpoint = strings.TrimRight(u.String(), "/")
	a.local = pathStyle(u)
	if a.name == "" {
		a.name = accountFromURL(u)
	}
	return a, nil
}

// accountFromURL guesses the account name from a service URL: the first
// label of the host (myaccount.table.core.windows.net) or, for an IP or
// localhost endpoint (Azurite's path style), the first path segment.
func accountFromURL(u *url.URL) string {
	if pathStyle(u) {
		seg, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		return seg
	}
	name, _, _ := strings.Cut(u.Hostname(), ".")
	return name
}

// pathStyle reports an endpoint on an IP address or localhost, where the
// account is the first path segment: an emulator's (Azure's own endpoints
// are host names).
func pathStyle(u *url.URL) bool {
	host := u.Hostname()
	return host == "localhost" || net.ParseIP(host) != nil
}

// parseConnectionString reads the key=value;... pairs of a connection
// string. Keys are case-insensitive. Errors name the missing or unknown
// key, never a value.
func parseConnectionString(cs string) (account, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return account{}, errors.New("azure: connection string: a part is not key=value")
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		return account{endpoint: devEndpoint, name: devAccountName, key: devAccountKey}, nil
	}
	a := account{name: kv["accountname"], key: kv["accountkey"], sas: strings.TrimPrefix(kv["sharedaccesssignature"], "?")}
	switch {
	case a.key != "" && a.sas != "":
		return account{}, errors.New("azure: connection string has both AccountKey and SharedAccessSignature")
	case a.key == "" && a.sas == "":
		return account{}, errors.New("azure: connection string has neither AccountKey nor SharedAccessSignature")
	case a.key != "" && a.name == "":
		return account{}, errors.New("azure: connection string has AccountKey but no AccountName")
	}
	if ep := kv["tableendpoint"]; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return account{}, errors.New("azure: connection string: TableEndpoint is not an http(s) URL")
		}
		if u.RawQuery != "" {
			return account{}, errors.New("azure: connection string: TableEndpoint carries a query; put the SAS in SharedAccessSignature")
		}
		a.endpoint = strings.TrimRight(u.String(), "/")
		a.local = pathStyle(u)
		if a.name == "" {
			a.name = accountFromURL(u)
		}
		return a, nil
	}
	if a.name == "" {
		return account{}, errors.New("azure: connection string has neither TableEndpoint nor AccountName")
	}
	proto := kv["defaultendpointsprotocol"]
	if proto == "" {
		proto = "https"
	}
	if proto != "https" && proto != "http" {
		return account{}, errors.New("azure: connection string: DefaultEndpointsProtocol is neither https nor http")
	}
	suffix := kv["endpointsuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	a.endpoint = proto + "://" + a.name + ".table." + suffix
	return a, nil
}

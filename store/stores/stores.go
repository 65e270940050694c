package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/azure"
)

// EnvTables is the environment variable that holds the table store spec
// when no flag gives one.
const EnvTables = "TABLEJOURNAL_TABLES"

// EmbeddedFile is the file name of the embedded store in the data folder.
const EmbeddedFile = "tables.db"

const sqlitePrefix = "sqlite:"

// Kind says which backend a spec selects.
type Kind int

const (
	Embedded Kind = iota // the embedded SQLite store
	Azure                // Azure Tables
	Cosmos               // Azure Cosmos DB for Table: Azure Tables' API with its own limits
)

// Parse reports which backend spec selects, and for the embedded store the
// file, resolved against dataDir for the empty spec. It does not open
// anything.
func Parse(spec, dataDir string) (kind Kind, path string, err error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		if dataDir == "" {
			return 0, "", errors.New("stores: no table store given and no data folder for the embedded one")
		}
		return Embedded, filepath.Join(dataDir, EmbeddedFile), nil
	case strings.HasPrefix(spec, sqlitePrefix):
		path := strings.TrimPrefix(spec, sqlitePrefix)
		if path == "" {
			return 0, "", errors.New("stores: sqlite: needs a file path, as in sqlite:/var/lib/tablejournal/tables.db")
		}
		return Embedded, path, nil
	case isURL(spec), strings.Contains(spec, "="):
		if IsCosmos(spec) {
			return Cosmos, "", nil
		}
		return Azure, "", nil
	}
	return 0, "", fmt.Errorf("stores: %s is neither sqlite:PATH nor an Azure Tables connection string (AccountName=…;AccountKey=…) or URL (https://…)%s", describeUnknown(spec), didYouMean(spec))
}

// maxShownUnknown is the longest value of no known form that an error
// quotes: a typo or a word ("garbage", "postgres") is shown, while a long
// value, which may be key material pasted in the wrong place, is not.
const maxShownUnknown = 32

// describeUnknown renders a spec of no known form for an error. It holds
// no '=' (so no key=value pair of a connection string) and is no URL.
func describeUnknown(spec string) string {
	printable := !strings.ContainsFunc(spec, func(r rune) bool { return r <= ' ' || r == 0x7f || r == utf8.RuneError })
	if len(spec) <= maxShownUnknown && printable {
		return strconv.Quote(spec)
	}
	return fmt.Sprintf("a value of %d characters (not shown: it may hold a secret)", utf8.RuneCountInString(spec))
}

// didYouMean suggests sqlite: for a spec that looks like a file path.
func didYouMean(spec string) string {
	if strings.HasSuffix(spec, ".db") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "./") {
		return "; for an embedded store file write sqlite:" + spec
	}
	return ""
}

// Option configures Open.
type Option func(*options)

type options struct {
	exclusive bool
	existing  bool
	auth      azauth.Config
}

// Auth sets how an Azure store authenticates (azure.Config's Auth,
// Credential and CAFile): the mode (--auth), the credential that signs
// in, the CA file. The embedded store ignores it.
func Auth(c azauth.Config) Option { return func(o *options) { o.auth = c } }

// Exclusive opens the embedded store as its one owner (sqlite.Exclusive):
// a second Exclusive open of the same file, in any process, fails with
// sqlite.ErrLocked naming the holder. A projector with its own embedded
// server opens its store so. It changes nothing for Azure, which any
// number of processes may share.
func Exclusive() Option { return func(o *options) { o.exclusive = true } }

// Existing opens only an embedded store that exists: a missing file is an
// error wrapping ErrNoStore, and nothing (no folder, no file) is created.
// A command that only reads (replay asof, history, verify...) opens its
// store so. It changes nothing for Azure.
func Existing() Option { return func(o *options) { o.existing = true } }

// Open opens the table store spec selects (see the package doc). The closer
// releases it; call it when done. ctx bounds the opening only.
func Open(ctx context.Context, spec, dataDir string, opts ...Option) (store.Store, io.Closer, error) {
	kind, path, err := Parse(spec, dataDir)
	if err != nil {
		return nil, nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if kind == Embedded {
		return openEmbedded(ctx, path, o)
	}
	cfg := azure.Config{ConnectionString: strings.TrimSpace(spec)}
	if isURL(spec) {
		cfg = azure.Config{Endpoint: strings.TrimSpace(spec)}
	}
	cfg.Cosmos = kind == Cosmos
	cfg.Auth, cfg.Credential, cfg.CAFile = string(o.auth.Mode), o.auth.Credential, o.auth.CAFile
	s, err := azure.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("stores: %s: %w", Describe(spec), err)
	}
	return s, s, nil
}

// IsCosmos reports whether spec, a connection string or URL, names an
// Azure Cosmos DB for Table endpoint: a URL, or a connection string's
// TableEndpoint, whose host ends in .table.cosmos.azure.com (or the older
// .table.cosmosdb.azure.com, or those of the national clouds, as
// .table.cosmos.azure.cn), or a connection string whose EndpointSuffix is
// such a domain.
func IsCosmos(spec string) bool {
	spec = strings.TrimSpace(spec)
	if isURL(spec) {
		return cosmosHost(spec)
	}
	for _, part := range strings.Split(spec, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "tableendpoint":
			if cosmosHost(strings.TrimSpace(v)) {
				return true
			}
		case "endpointsuffix":
			if isCosmosDomain("account.table." + strings.TrimSpace(v)) {
				return true
			}
		}
	}
	return false
}

func cosmosHost(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && isCosmosDomain(u.Hostname())
}

func isCosmosDomain(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return strings.Contains(host, ".table.cosmos.") || strings.Contains(host, ".table.cosmosdb.")
}

func isURL(spec string) bool {
	return strings.HasPrefix(spec, "https://") || strings.HasPrefix(spec, "http://")
}

// publicKeys are the connection string keys whose values Describe shows;
// the value of any other key is hidden, and an unknown key is hidden whole
// (a stray key or signature may look like key=value: base64 ends in "=").
var publicKeys = map[string]bool{
	"defaultendpointsprotocol":   true,
	"accountname":                true,
	"endpointsuffix":             true,
	"tableendpoint":              true,
	"blobendpoint":               true,
	"queueendpoint":              true,
	"fileendpoint":               true,
	"usedevelopmentstorage":      true,
	"developmentstorageproxyuri": true,
}

// secretKeys are the connection string keys whose values are secrets.
var secretKeys = map[string]bool{
	"accountkey":            true,
	"sharedaccesssignature": true,
}

// Describe renders spec for logs and errors: the embedded store by its
// file, a connection string with AccountKey=*** and
// SharedAccessSignature=***, a URL without its query (the SAS).
func Describe(spec string) string {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return "embedded (" + EmbeddedFile + " in the data folder)"
	case strings.HasPrefix(spec, sqlitePrefix):
		return spec
	case isURL(spec):
		u, err := url.Parse(spec)
		if err != nil {
			return "(unparsable URL)"
		}
		hadQuery := u.RawQuery != ""
		u.RawQuery, u.Fragment, u.User = "", "", nil
		if hadQuery {
			return u.String() + "?***"
		}
		return u.String()
	}
	parts := strings.Split(spec, ";")
	for i, part := range parts {
		k, _, _ := strings.Cut(part, "=")
		name := strings.ToLower(strings.TrimSpace(k))
		switch {
		case strings.TrimSpace(part) == "", publicKeys[name]:
		case secretKeys[name]:
			parts[i] = k + "=***"
		default:
			parts[i] = "***"
		}
	}
	return strings.Join(parts, ";")
}

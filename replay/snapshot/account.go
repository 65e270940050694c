package snapshot

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/tablejournal/tablejournal/internal/azauth"
)

// The development account of Azurite, named by UseDevelopmentStorage=true.
const (
	devAccountName = "devstoreaccount1"
	devAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devBlobURL     = "http://127.0.0.1:10000/" + devAccountName
)

// account is the blob service of a storage account and how to sign for it.
type account struct {
	endpoint  string // the blob service URL, no trailing slash, no query
	name, key string
	sas       string // a SAS token, without "?"
}

// accountOf reads the blob side of a table store connection string: its
// BlobEndpoint, or https://<AccountName>.blob.<EndpointSuffix>, signed with
// its AccountKey or SharedAccessSignature; or of a bare table service URL
// (https://<account>.table.core.windows.net), the account's blob endpoint,
// signed in. Errors never carry a value of the string.
func accountOf(tables string) (account, error) {
	if u, err := url.Parse(tables); err == nil && u.Scheme != "" && !strings.Contains(tables, "=") {
		return blobAccountOf(u)
	}
	if tables == "" || !strings.Contains(tables, "=") {
		return account{}, fmt.Errorf("%w: azblob:// names a blob in the account of --tables, which is not a connection string; give the blob's URL with a SAS token instead", ErrLocation)
	}
	kv := map[string]string{}
	for _, part := range strings.Split(tables, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	if strings.EqualFold(kv["usedevelopmentstorage"], "true") {
		return account{endpoint: devBlobURL, name: devAccountName, key: devAccountKey}, nil
	}
	a := account{name: kv["accountname"], key: kv["accountkey"], sas: strings.TrimPrefix(kv["sharedaccesssignature"], "?")}
	if a.key == "" && a.sas == "" {
		return account{}, fmt.Errorf("%w: the --tables connection string has neither AccountKey nor SharedAccessSignature", ErrLocation)
	}
	if ep := kv["blobendpoint"]; ep != "" {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			return account{}, fmt.Errorf("%w: the --tables connection string's BlobEndpoint is not an http(s) URL without a query", ErrLocation)
		}
		a.endpoint = strings.TrimRight(u.String(), "/")
		return a, nil
	}
	if a.name == "" {
		return account{}, fmt.Errorf("%w: the --tables connection string has neither BlobEndpoint nor AccountName", ErrLocation)
	}
	proto := kv["defaultendpointsprotocol"]
	if proto != "http" {
		proto = "https"
	}
	suffix := kv["endpointsuffix"]
	if suffix == "" {
		suffix = "core.windows.net"
	}
	a.endpoint = proto + "://" + a.name + ".blob." + suffix
	return a, nil
}

// blobAccountOf is the blob endpoint of the account of a bare table
// service URL, signed in: https://<account>.table.<suffix> becomes
// https://<account>.blob.<suffix>.
func blobAccountOf(u *url.URL) (account, error) {
	name, suffix, ok := strings.Cut(u.Host, ".table.")
	if !ok || strings.Contains(name, ".") || strings.HasPrefix(suffix, "cosmos") || u.RawQuery != "" {
		return account{}, fmt.Errorf("%w: azblob:// names a blob in the storage account of --tables, whose blob endpoint cannot be told from %s; give the blob's URL instead", ErrLocation, Describe(u.String()))
	}
	return account{endpoint: u.Scheme + "://" + name + ".blob." + suffix}, nil
}

// clients returns the clients of blob name in container cont, and the
// mode they authenticate with.
func (a account) clients(cont, name string, auth azauth.Config) (*blockblob.Client, *container.Client, azauth.Mode, error) {
	contURL := a.endpoint + "/" + url.PathEscape(cont)
	blobURL := contURL + "/" + escapeBlobName(name)
	mode, opts, err := blobOptions(auth, a.endpoint, a.key != "", a.sas != "")
	if err != nil {
		return nil, nil, "", err
	}
	switch mode {
	case azauth.Login:
		bb, cc, err := signedInClients(auth, blobURL, contURL, opts)
		return bb, cc, mode, err
	case azauth.SAS:
		bb, err := blockblob.NewClientWithNoCredential(blobURL+"?"+a.sas, &blockblob.ClientOptions{ClientOptions: opts})
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: %v", ErrLocation, err)
		}
		cc, err := container.NewClientWithNoCredential(contURL+"?"+a.sas, &container.ClientOptions{ClientOptions: opts})
		return bb, cc, mode, err
	}
	cred, err := azblob.NewSharedKeyCredential(a.name, a.key)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: the --tables connection string's AccountKey is not valid", ErrLocation)
	}
	bb, err := blockblob.NewClientWithSharedKeyCredential(blobURL, cred, &blockblob.ClientOptions{ClientOptions: opts})
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %v", ErrLocation, err)
	}
	cc, err := container.NewClientWithSharedKeyCredential(contURL, cred, &container.ClientOptions{ClientOptions: opts})
	return bb, cc, mode, err
}

// blobOptions chooses the mode of a blob location (azauth.Config.Choose)
// and the client options: the transport trusting auth's CA file.
func blobOptions(auth azauth.Config, endpoint string, hasKey, hasSAS bool) (azauth.Mode, azcore.ClientOptions, error) {
	var opts azcore.ClientOptions
	mode, err := auth.Choose(endpoint, hasKey, hasSAS)
	if err == nil {
		opts.Transport, err = auth.Transport()
	}
	return mode, opts, err
}

// signedInClients are the clients of a blob and its container, signed in
// with auth's credential.
func signedInClients(auth azauth.Config, blobURL, contURL string, opts azcore.ClientOptions) (*blockblob.Client, *container.Client, error) {
	cred, err := auth.TokenCredential(opts.Transport)
	if err != nil {
		return nil, nil, err
	}
	bb, err := blockblob.NewClient(blobURL, cred, &blockblob.ClientOptions{ClientOptions: opts})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrLocation, err)
	}
	cc, err := container.NewClient(contURL, cred, &container.ClientOptions{ClientOptions: opts})
	return bb, cc, err
}

// escapeBlobName escapes each "/"-separated segment of a blob name.
func escapeBlobName(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

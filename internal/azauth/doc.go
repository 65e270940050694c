// Package azauth is how tablejournal authenticates to Azure, in one place
// for the table store (store/azure) and the snapshot blobs: which of an
// account key, a SAS token or a Microsoft Entra ID sign-in a location
// uses (Mode, Config.Choose), the credential that signs in
// (Config.TokenCredential: the caller's, or azidentity's
// DefaultAzureCredential), the HTTP transport that trusts a private CA
// (Config.Transport: CAFile and SSL_CERT_FILE), and the explanation of
// the refusals a user can act on (Explain: a storage account that allows
// no keys, an identity without a data role, a token the service refused,
// no identity found).
//
// Signing in needs https: Choose refuses it for an http:// endpoint
// (ErrLoginOverHTTP) rather than let the SDK send a bearer token in the
// clear. Nothing here puts a token in an error or a log: the credential's
// errors carry no token, and Explain's texts are built from the service's
// error code and detail, with anything shaped like a JWT replaced.
package azauth

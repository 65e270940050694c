package azauth

import "errors"

// Errors of signing in and of the service's refusals, checked with
// errors.Is. The errors that carry them say what to do.
var (
	// ErrMode: an --auth value that is none of key, sas and login, or a
	// mode the location cannot take (key without an account key, login
	// with a key or SAS in the location).
	ErrMode = errors.New("authentication mode")
	// ErrLoginOverHTTP: signing in asked for an http:// endpoint; a
	// bearer token is sent only over https.
	ErrLoginOverHTTP = errors.New("signing in needs https")
	// ErrNoIdentity: the credential chain found no identity to sign in
	// with (no environment settings, no workload or managed identity, no
	// Azure CLI login).
	ErrNoIdentity = errors.New("no Microsoft Entra identity found")
	// ErrSignIn: an identity was found but getting a token failed (a
	// wrong secret, an unknown tenant or client ID).
	ErrSignIn = errors.New("signing in to Microsoft Entra ID failed")
	// ErrKeyNotPermitted: the storage account refuses shared keys and
	// the SAS tokens signed with them (AllowSharedKeyAccess=false, or
	// disableLocalAuth on Cosmos DB): sign in instead.
	ErrKeyNotPermitted = errors.New("the account does not allow key-based authentication")
	// ErrRoleMissing: the signed-in identity has no data role that
	// allows the operation.
	ErrRoleMissing = errors.New("the identity lacks a data role")
	// ErrTokenRejected: the service refused the token (expired, for
	// another audience or tenant).
	ErrTokenRejected = errors.New("the service refused the token")
	// ErrCAFile: the CA file cannot be read or holds no PEM certificate.
	ErrCAFile = errors.New("CA file")
	// ErrUnknownCA: the endpoint's TLS certificate is signed by a CA
	// neither the system nor --ca-file trusts (ExplainTLS).
	ErrUnknownCA = errors.New("certificate signed by an unknown authority")
)

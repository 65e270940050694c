package azauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// sources says where DefaultAzureCredential looks, for the error that
// found none.
const sources = "a service principal in the environment (AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH), " +
	"workload identity (AZURE_FEDERATED_TOKEN_FILE, set by the AKS webhook), " +
	"a managed identity (on Azure; AZURE_CLIENT_ID picks a user-assigned one), " +
	"or a login of the Azure CLI (az login), Azure Developer CLI or Azure PowerShell"

// TokenCredential returns the credential that signs in: c.Credential, or
// else azidentity's DefaultAzureCredential, whose token requests use
// transport (nil: the SDK's). Its errors say what was tried and what to
// do: ErrNoIdentity when no source had an identity, ErrSignIn when one
// failed. Building the default credential contacts nothing.
func (c Config) TokenCredential(transport policy.Transporter) (azcore.TokenCredential, error) {
	if c.Credential != nil {
		return explaining{cred: c.Credential}, nil
	}
	opts := &azidentity.DefaultAzureCredentialOptions{}
	if transport != nil {
		opts.ClientOptions.Transport = transport
	}
	cred, err := azidentity.NewDefaultAzureCredential(opts)
	if err != nil {
		// An AZURE_TOKEN_CREDENTIALS naming no credential.
		return nil, fmt.Errorf("%w: %w", ErrNoIdentity, err)
	}
	return explaining{cred: cred, chain: true}, nil
}

// explaining wraps a credential so that its failures say what to do.
type explaining struct {
	cred  azcore.TokenCredential
	chain bool // the default chain: an unavailable source is ErrNoIdentity
}

func (e explaining) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	tok, err := e.cred.GetToken(ctx, opts)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return tok, err
	}
	if unknownCA(err) {
		// The identity endpoint's certificate, not the identity.
		return tok, &signInError{kind: ErrUnknownCA, hint: adviseCAFile, cause: err}
	}
	var failed *azidentity.AuthenticationFailedError
	switch {
	case e.chain && !errors.As(err, &failed):
		return tok, &signInError{kind: ErrNoIdentity, hint: "sign in with one of " + sources + "; or give a key or SAS (--auth key, --auth sas)", cause: err}
	default:
		return tok, &signInError{kind: ErrSignIn, hint: "check the identity's settings (tenant, client ID, secret or certificate) and that it exists", cause: err}
	}
}

// signInError is a failed sign-in: the sentinel, what to do, and what
// the credential said (azidentity lists every source it tried, and why
// each had no identity).
type signInError struct {
	kind  error
	hint  string
	cause error
}

func (e *signInError) Error() string {
	return fmt.Sprintf("%v: %s. What the credential said: %s", e.kind, e.hint, RedactTokens(e.cause.Error()))
}

func (e *signInError) Unwrap() []error { return []error{e.kind, e.cause} }

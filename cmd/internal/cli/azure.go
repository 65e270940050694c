package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/tablejournal/tablejournal/internal/azauth"
)

// Environment variables of the Azure flags.
const (
	EnvAuth   = "TABLEJOURNAL_AUTH"
	EnvCAFile = "TABLEJOURNAL_CA_FILE"
)

// AzureFlags are how the commands that read tables authenticate to
// Azure, for the table store and the snapshot blobs alike: --auth, in the
// style of az storage's --auth-mode, and --ca-file.
type AzureFlags struct{ mode, caFile string }

// Register registers --auth and --ca-file on fs, defaulting to
// $TABLEJOURNAL_AUTH and $TABLEJOURNAL_CA_FILE.
func (a *AzureFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&a.mode, "auth", os.Getenv(EnvAuth), "how to authenticate to Azure: key (the connection string's AccountKey), sas (a SAS token) or login (Microsoft Entra ID, as DefaultAzureCredential finds it); default: the key or SAS --tables carries, else login (env "+EnvAuth+")")
	fs.StringVar(&a.caFile, "ca-file", os.Getenv(EnvCAFile), "PEM file of CA certificates to trust for Azure endpoints besides the system's and $SSL_CERT_FILE's, for a private endpoint or an HTTPS emulator (env "+EnvCAFile+")")
}

// Config returns the flags as the store's and the snapshots' auth
// config; a usage error for an --auth value that is no mode.
func (a *AzureFlags) Config() (azauth.Config, error) {
	m, err := azauth.ParseMode(a.mode)
	if err != nil {
		return azauth.Config{}, UsageError(fmt.Errorf("--auth: %w", err))
	}
	return azauth.Config{Mode: m, CAFile: a.caFile}, nil
}

package cli

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Environment variables read by every command. Secrets are read from the
// environment or flags but never shown as --help defaults, logged or
// printed in errors.
const (
	EnvNATS         = "TABLEJOURNAL_NATS"
	EnvNATSCreds    = "TABLEJOURNAL_NATS_CREDS"
	EnvNATSNkey     = "TABLEJOURNAL_NATS_NKEY"
	EnvNATSUser     = "TABLEJOURNAL_NATS_USER"
	EnvNATSPassword = "TABLEJOURNAL_NATS_PASSWORD"
	EnvTables       = "TABLEJOURNAL_TABLES"
	EnvData         = "TABLEJOURNAL_DATA"
	EnvStream       = "TABLEJOURNAL_STREAM"
	DefaultNATSURL  = "nats://127.0.0.1:4222"
)

// natsFlags are the connection flags shared by every command.
type natsFlags struct {
	url, creds, nkey, user, password string
	tlsCA, tlsCert, tlsKey           string
}

func (n *natsFlags) register(fs *flag.FlagSet, defaultURL string) {
	fs.StringVar(&n.url, "nats", envOr(EnvNATS, defaultURL), "NATS server URL (env "+EnvNATS+")")
	// The URL from the environment may carry user:password@: --help shows
	// the default without it.
	fs.Lookup("nats").DefValue = redactURL(n.url)
	fs.StringVar(&n.creds, "creds", os.Getenv(EnvNATSCreds), "NATS credentials file (env "+EnvNATSCreds+")")
	fs.StringVar(&n.nkey, "nkey", os.Getenv(EnvNATSNkey), "NATS nkey seed file (env "+EnvNATSNkey+")")
	fs.StringVar(&n.user, "user", os.Getenv(EnvNATSUser), "NATS user (env "+EnvNATSUser+")")
	// No default shown: the password comes from the environment after parsing.
	fs.StringVar(&n.password, "password", "", "NATS password (env "+EnvNATSPassword+")")
	fs.StringVar(&n.tlsCA, "tls-ca", "", "CA certificate file to verify the NATS server")
	fs.StringVar(&n.tlsCert, "tls-cert", "", "client certificate file for NATS TLS")
	fs.StringVar(&n.tlsKey, "tls-key", "", "client key file for NATS TLS")
}

func (n *natsFlags) options(name string) ([]nats.Option, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if n.password == "" {
		n.password = os.Getenv(EnvNATSPassword)
	}
	if n.creds != "" {
		opts = append(opts, nats.UserCredentials(n.creds))
	}
	if n.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(n.nkey)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s: %w", n.nkey, err)
		}
		opts = append(opts, o)
	}
	if n.user != "" {
		opts = append(opts, nats.UserInfo(n.user, n.password))
	}
	if n.tlsCA != "" {
		opts = append(opts, nats.RootCAs(n.tlsCA))
	}
	if n.tlsCert != "" || n.tlsKey != "" {
		opts = append(opts, nats.ClientCert(n.tlsCert, n.tlsKey))
	}
	return opts, nil
}

// connect dials NATS and returns the connection and its JetStream context.
// Errors name the server but never a credential.
func (n *natsFlags) connect(ctx context.Context, name string) (*nats.Conn, jetstream.JetStream, error) {
	return connectURL(n, n.url, name)
}

func connectURL(n *natsFlags, url, name string) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := n.options(name)
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", redactURL(url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// redactURL hides a user:password@ part of a URL.
func redactURL(u string) string {
	for i := 0; i+2 < len(u); i++ {
		if u[i:i+3] == "://" {
			rest := u[i+3:]
			for j := 0; j < len(rest) && rest[j] != '/'; j++ {
				if rest[j] == '@' {
					return u[:i+3] + "***@" + rest[j+1:]
				}
			}
			break
		}
	}
	return u
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

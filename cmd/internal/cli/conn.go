package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"strings"

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

// NATSFlags are the connection flags shared by every command.
type NATSFlags struct {
	url, creds, nkey, user, password string
	tlsCA, tlsCert, tlsKey           string
}

// URL is the --nats flag's value: the server URLs, comma-separated.
func (n *NATSFlags) URL() string { return n.url }

// Register registers the connection flags on fs, --nats defaulting to
// $TABLEJOURNAL_NATS or else defaultURL; "" is the projector's: no URL,
// its embedded server.
func (n *NATSFlags) Register(fs *flag.FlagSet, defaultURL string) {
	usage := "NATS server URLs, comma-separated (env " + EnvNATS + ")"
	if defaultURL == "" {
		usage += "; when neither is set, the embedded server"
	}
	fs.StringVar(&n.url, "nats", EnvOr(EnvNATS, defaultURL), usage)
	// The URLs from the environment may carry user:password@: --help shows
	// the default redacted.
	fs.Lookup("nats").DefValue = redactURLs(n.url)
	fs.StringVar(&n.creds, "creds", os.Getenv(EnvNATSCreds), "NATS credentials file (env "+EnvNATSCreds+")")
	fs.StringVar(&n.nkey, "nkey", os.Getenv(EnvNATSNkey), "NATS nkey seed file (env "+EnvNATSNkey+")")
	fs.StringVar(&n.user, "user", os.Getenv(EnvNATSUser), "NATS user (env "+EnvNATSUser+")")
	// No default shown: the password comes from the environment after parsing.
	fs.StringVar(&n.password, "password", "", "NATS password (env "+EnvNATSPassword+")")
	fs.StringVar(&n.tlsCA, "tls-ca", "", "CA certificate file to verify the NATS server")
	fs.StringVar(&n.tlsCert, "tls-cert", "", "client certificate file for NATS TLS")
	fs.StringVar(&n.tlsKey, "tls-key", "", "client key file for NATS TLS")
}

// options are the client options of the flags: name, reconnects, credentials, TLS.
func (n *NATSFlags) options(name string) ([]nats.Option, error) {
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

// Connect dials NATS and returns the connection and its JetStream context.
// Errors name the server but never a credential.
func (n *NATSFlags) Connect(ctx context.Context, name string) (*nats.Conn, jetstream.JetStream, error) {
	return ConnectURL(n, n.url, name)
}

// ConnectURL is Connect to url instead of the --nats value, with extra
// options: the projector connects so to its embedded server.
func ConnectURL(n *NATSFlags, url, name string, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := n.options(name)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		// The client's errors may quote the URL (a parse error does).
		return nil, nil, n.redact(fmt.Errorf("connect to NATS at %s: %w", redactURLs(url), err), url)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, n.redact(err, url)
	}
	return nc, js, nil
}

// LogAsyncErrors makes the client's asynchronous errors — a slow consumer
// dropping messages, a permission violation — log lines instead of
// nothing (the client's default).
func LogAsyncErrors(log *slog.Logger) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		log.Warn("NATS client error", "subject", subject, "err", err)
	})
}

// Redacted is the text that stands for a secret.
const Redacted = "xxxxx"

// redactURLs hides the credentials of every URL of a comma-separated list,
// the form --nats and TABLEJOURNAL_NATS take. It is the one place URLs are
// made fit to show: --help defaults, errors and logs go through it.
func redactURLs(list string) string {
	urls := strings.Split(list, ",")
	for i, u := range urls {
		urls[i] = RedactURL(u)
	}
	return strings.Join(urls, ",")
}

// RedactURL hides the credentials of one URL with url.URL.Redacted: the
// password, or a lone user name, which NATS takes as a token. A URL
// without a scheme (u:secret@host) is read as nats://; one that does not
// parse loses everything before its last '@'.
func RedactURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		// Nothing to hide, and no URL to show: parsed as "nats://" it
		// would read "nats:", a URL of no server.
		return ""
	}
	noScheme := !strings.Contains(s, "://")
	in := s
	if noScheme {
		in = "nats://" + s
	}
	u, err := neturl.Parse(in)
	if err != nil {
		at := strings.LastIndex(s, "@")
		if at < 0 {
			return s
		}
		scheme := ""
		if i := strings.Index(s, "://"); i >= 0 && i < at {
			scheme = s[:i+3]
		}
		return scheme + Redacted + s[at:]
	}
	if u.User != nil {
		if _, hasPassword := u.User.Password(); !hasPassword {
			u.User = neturl.User(Redacted)
		}
	}
	out := u.Redacted()
	if noScheme {
		out = strings.TrimPrefix(out, "nats://")
	}
	return out
}

// urlSecrets returns the passwords and tokens of a URL list.
func urlSecrets(list string) []string {
	var out []string
	for _, raw := range strings.Split(list, ",") {
		s := strings.TrimSpace(raw)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := neturl.Parse(s)
		switch {
		case err == nil && u.User != nil:
			if p, ok := u.User.Password(); ok {
				out = append(out, p)
			} else {
				out = append(out, u.User.Username())
			}
		case err != nil:
			// Unparsed: the whole user-info part is the secret.
			at, from := strings.LastIndex(s, "@"), strings.Index(s, "://")+3
			if at >= from {
				out = append(out, s[from:at])
			}
		}
	}
	return out
}

// redact returns err with every URL of list shown redacted and every
// credential (URL passwords and tokens, --password) replaced, keeping what
// it wraps for errors.Is.
func (n *NATSFlags) redact(err error, list string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			msg = strings.ReplaceAll(msg, u, RedactURL(u))
		}
	}
	secrets := urlSecrets(list)
	if n.password != "" {
		secrets = append(secrets, n.password)
	}
	for _, s := range secrets {
		if s != "" && s != Redacted {
			msg = strings.ReplaceAll(msg, s, Redacted)
		}
	}
	if msg == err.Error() {
		return err
	}
	return redactedError{msg: msg, err: err}
}

// redactedError shows a redacted message and wraps the original error.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// EnvOr is the environment variable key, or def when it is empty.
func EnvOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

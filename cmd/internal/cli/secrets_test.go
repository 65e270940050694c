package cli

import "testing"

func TestRedactURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""}, // the projector's default: its embedded server, not "nats:"
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://u:secret1@h1,nats://u:secret2@h2", "nats://u:xxxxx@h1,nats://u:xxxxx@h2"},
		{"nats://u:secret1@h1, tls://u:secret2@h2:4443", "nats://u:xxxxx@h1,tls://u:xxxxx@h2:4443"},
		{"u:secret@host", "u:xxxxx@host"},
		{"u:secret@host:4222,h2", "u:xxxxx@host:4222,h2"},
		{"nats://t0ken@host", "nats://xxxxx@host"},
		{"t0ken@host", "xxxxx@host"},
		{"nats://u:se%zzcret@host", "nats://xxxxx@host"}, // does not parse
		{"nats://u:secret@host:99999999", "nats://u:xxxxx@host:99999999"},
	}
	for _, tt := range tests {
		if got := redactURLs(tt.in); got != tt.want {
			t.Errorf("redactURLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCommandsHideSecrets: every command, given NATS URLs with credentials
// by flag or environment, shows none of them in errors or --help.

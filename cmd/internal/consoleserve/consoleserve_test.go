package consoleserve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/console"
)

func TestReadAuth(t *testing.T) {
	tests := []struct {
		name, file string
		want       *console.Auth
		err        bool
	}{
		{"user line", "# console\n\nuser ops pw with: colons\n", &console.Auth{User: "ops", Password: "pw with: colons"}, false},
		{"token line", "token tok:with:colons\n", &console.Auth{Token: "tok:with:colons"}, false},
		{"old basic", "ops:pw-456\n", &console.Auth{User: "ops", Password: "pw-456"}, false},
		{"old token", "  tok-123  \n", &console.Auth{Token: "tok-123"}, false},
		{"old empty password", "admin:", nil, true},
		{"old empty user", ":abc", nil, true},
		{"colon alone", ":", nil, true},
		{"old many colons", "tok:with:q9z", nil, true},
		{"user without password", "user admin", nil, true},
		{"token with space", "token tok en", nil, true},
		{"unknown kind", "bearer s3cret", nil, true},
		{"two credentials", "token a\ntoken b", nil, true},
		{"empty", "\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "auth")
			if err := os.WriteFile(p, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAuth(p)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			if err != nil {
				if !errors.Is(err, ErrAuthFile) {
					t.Errorf("err %v is not ErrAuthFile", err)
				}
				for _, secret := range []string{"abc", "q9z", "s3cret", "tok en"} {
					if strings.Contains(tt.file, secret) && strings.Contains(err.Error(), secret) {
						t.Errorf("error shows the secret %q: %v", secret, err)
					}
				}
				if strings.TrimSpace(tt.file) != "" && !strings.Contains(err.Error(), "line ") {
					t.Errorf("error names no line: %v", err)
				}
				return
			}
			if *got != *tt.want {
				t.Errorf("got %+v, want %+v", *got, *tt.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8089": true, "localhost:0": true, "[::1]:80": true,
		":8089": false, "0.0.0.0:8089": false, "10.0.0.5:80": false, "bad": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

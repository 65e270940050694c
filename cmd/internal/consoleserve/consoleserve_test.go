package consoleserve

import (
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
		{"basic", "ops:pw-456\n", &console.Auth{User: "ops", Password: "pw-456"}, false},
		{"token", "  tok-123  \nignored\n", &console.Auth{Token: "tok-123"}, false},
		{"token with colon", ":abc", &console.Auth{Token: ":abc"}, false},
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
				if strings.Contains(err.Error(), strings.TrimSpace(tt.file)) && strings.TrimSpace(tt.file) != "" {
					t.Errorf("error shows the file's content: %v", err)
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

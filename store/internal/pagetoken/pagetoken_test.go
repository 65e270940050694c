package pagetoken

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	type pos struct{ PK, RK string }
	tests := []struct {
		name  string
		token string
		want  pos
		err   error
	}{
		{"empty is the start", "", pos{}, nil},
		{"encoded", Encode(pos{"p", "tip:r"}), pos{"p", "tip:r"}, nil},
		{"not base64url", "!!", pos{}, ErrMalformed},
		{"not JSON", Encode("x")[:2], pos{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got pos
			err := Decode(tt.token, &got)
			if !errors.Is(err, tt.err) || (err == nil && got != tt.want) {
				t.Errorf("Decode(%q) = %+v, %v; want %+v, %v", tt.token, got, err, tt.want, tt.err)
			}
		})
	}
}

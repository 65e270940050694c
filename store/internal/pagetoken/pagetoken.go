// Package pagetoken carries a position in a paged query as an opaque
// continuation token: base64url JSON of a value the store defines. The Azure
// backend and the test kit's paging wrapper both use it.
package pagetoken

import (
	"encoding/base64"
	"encoding/json"
	"errors"
)

// ErrMalformed says a token is not base64url JSON of the expected value.
var ErrMalformed = errors.New("malformed continuation token")

// Encode returns the token of v.
func Encode(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode reads token into v; the empty token leaves v as it is (the start
// of the query). It fails with ErrMalformed on a token Encode did not make.
func Decode(token string, v any) error {
	if token == "" {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return ErrMalformed
	}
	return nil
}

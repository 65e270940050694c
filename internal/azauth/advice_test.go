package azauth

import (
	"errors"
	"strings"
	"testing"
)

// TestLoginAdviceIsAccepted: the endpoint --auth login advises for a key
// connection string is one Choose accepts; before the fix it advised the
// http:// endpoint, which login then refused.
func TestLoginAdviceIsAccepted(t *testing.T) {
	_, err := Config{Mode: Login}.Choose("http://127.0.0.1:10002/devstoreaccount1", true, false)
	if !errors.Is(err, ErrMode) || !strings.Contains(err.Error(), "as https://127.0.0.1:10002/devstoreaccount1") {
		t.Fatalf("Choose: %v, want ErrMode advising the https:// endpoint", err)
	}
	if _, err := (Config{Mode: Login}).Choose("https://127.0.0.1:10002/devstoreaccount1", false, false); err != nil {
		t.Fatalf("the advised endpoint: %v", err)
	}
}

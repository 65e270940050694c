package azure

import (
	"context"
	"os"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azurite"
)

// srv is the one Azurite of this test binary.
var srv *azurite.Server

func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &srv)) }

// newStore returns a Store on the test Azurite.
func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(Config{ConnectionString: srv.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var bg = context.Background()

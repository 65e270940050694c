package snapshot_test

import (
	"os"
	"testing"

	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
)

func TestMain(m *testing.M) {
	snapshot.AzuriteOfTest = func() *azurite.Server { return replaytest.Azurite }
	os.Exit(replaytest.Main(m))
}

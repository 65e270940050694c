package erasure_test

import (
	"os"
	"testing"

	"github.com/tablejournal/tablejournal/replay/replaytest"
)

func TestMain(m *testing.M) { os.Exit(replaytest.Main(m)) }

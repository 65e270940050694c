package azure

import (
	"testing"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// azuriteQuirks are Azurite's known differences from Azure Tables that the
// backend cannot hide; each names its Azurite issue.
var azuriteQuirks = storetest.Quirks{
	// Azurite does not cap the properties of a merged row (Azure/Azurite#1446).
	MergeLimitsUnchecked: true,
	// Entity operations match the table name case-sensitively; only
	// creation was fixed (Azure/Azurite#1355).
	TableNamesCaseSensitive: true,
	// JSON.stringify writes -0 as 0.
	NegativeZeroLost: true,
	// Writes other than Insert are size-checked on their JSON, Binary as
	// base64 (no Azurite issue filed).
	EntityLimitOnWire: true,
}

func TestConformance(t *testing.T) {
	t.Parallel() // fresh tables per subtest: the three runs share Azurite, not rows
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) }, azuriteQuirks)
}

func BenchmarkAzurite(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return newStore(b) })
}

// TestConformancePaged runs the suite through a wrapper that pages like
// Azure proper: small scan budgets and empty pages with continuations,
// which Azurite does not produce.
func TestConformancePaged(t *testing.T) {
	t.Parallel() // fresh tables per subtest: the three runs share Azurite, not rows
	storetest.RunPaged(t, func(t *testing.T) store.Store { return newStore(t) }, azuriteQuirks)
}

// TestConformanceShuffled runs the suite with every page's rows shuffled,
// as Cosmos DB for Table answers them.
func TestConformanceShuffled(t *testing.T) {
	t.Parallel() // fresh tables per subtest: the three runs share Azurite, not rows
	storetest.RunShuffled(t, func(t *testing.T) store.Store { return newStore(t) }, azuriteQuirks)
}

package projection

import (
	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/rows"
)

// The pure decision lives in projection/decide; these are its names as
// the projector's API has always spelled them.
type (
	// Entry is one journal message of a partition, ready to apply (decide.Entry).
	Entry = decide.Entry
	// Prior is an outcome stored for a command ID (decide.Prior).
	Prior = decide.Prior
	// Result is what applying one entry did (decide.Result).
	Result = decide.Result
	// Change is one applied row change, with before and after images (decide.Change).
	Change = decide.Change
	// TraceContext is the W3C trace context of a journal message (decide.TraceContext).
	TraceContext = decide.TraceContext
)

// Skipped is the status of a redelivered command whose effect is already
// in the table (decide.Skipped).
const Skipped = decide.Skipped

type (
	fence    = decide.Fence
	txn      = decide.Txn
	rowState = rows.State
	opSource = decide.Source
)

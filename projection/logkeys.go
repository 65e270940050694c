package projection

// Log keys used by the projector and the driver: one attribute, one name,
// in every log line.
const (
	LogSeq   = "seq"
	LogTable = "table"
	LogPK    = "pk"
	LogCmd   = "cmd"
	LogShard = "shard"
)

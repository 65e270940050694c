// Package sqlite is the embedded table store: a store.Store in one local
// SQLite file (through the pure-Go modernc.org/sqlite), with the semantics
// and limits of Azure Tables, for zero-setup use and tests.
//
// # Layout
//
// The file holds every table in one clustered index,
//
//	entities(tid, pk, rk, ts, props) PRIMARY KEY (tid, pk, rk) WITHOUT ROWID
//
// beside tables(id, name COLLATE NOCASE) — Azure table names are
// case-insensitive — and a one-row clock. Keys are BLOBs holding the UTF-8
// key with the lead bytes of 4-byte sequences moved below those of
// U+E000..U+FFFF (store.UTF16OrderByte), so that SQLite's byte order is
// Azure's UTF-16 code unit order and range scans use the index. Properties
// are one BLOB in a small binary encoding that is exact for all eight EDM
// types (NaN payloads, -0, Int64 extremes, DateTime to the nanosecond).
//
// # Versions and etags
//
// ts is the store's clock in 100 ns ticks: every write transaction takes
// max(now, last+1), so it strictly increases across transactions, processes
// and restarts, and all rows of one transaction share it, as in Azure. The
// etag is rendered from it in Azure's form, W/"datetime'…'", so it names
// exactly one version of a row and is never reused; Timestamp is the same
// instant.
//
// # Concurrency and durability
//
// The file is in WAL mode: readers (a pool of connections) never block the
// writer nor each other, and another process — the replay CLI — may open the
// same file and read while the projector writes. Writes go through one
// connection and BEGIN IMMEDIATE, so a transaction holds SQLite's write lock
// from its first read, and its checks (exists, etag) and writes are one
// atomic step; writers in other processes wait up to the busy timeout, then
// get store.ErrBusy. Commits use synchronous=FULL: the projector acknowledges
// a journal message once Transact returns, so a returned commit must survive
// a power loss, which WAL with synchronous=NORMAL does not promise.
//
// # Deleted rows
//
// The write connection runs with secure_delete=ON: a delete zeroes the
// content it frees in its pages. The write-ahead log still holds the page
// images of earlier transactions; Scrub (store.Scrubber, called by erasure)
// checkpoints and truncates it, and rewrites the file with VACUUM if a
// value looked for is still found in any of the store's files.
package sqlite

package store

import (
	"errors"
	"fmt"
)

// Errors returned by a Store, checked with errors.Is.
var (
	ErrNotFound      = errors.New("entity not found")
	ErrExists        = errors.New("entity already exists")
	ErrPrecondition  = errors.New("precondition failed: etag mismatch")
	ErrTableNotFound = errors.New("table not found")
	ErrTableExists   = errors.New("table already exists")
	// ErrTooLarge: too many operations, too many bytes, an entity over
	// 1 MiB or over 252 properties.
	ErrTooLarge = errors.New("request too large")
	// ErrInvalid: a malformed key, property, table name, or a transaction
	// spanning partitions or touching one row twice.
	ErrInvalid = errors.New("invalid input")
	// ErrBusy: throttled or server busy (HTTP 408/429/500/503/504) after the
	// backend's own retries. Transient: the caller may retry later.
	ErrBusy = errors.New("store busy")
)

// TxError reports which operation of a transaction failed.
type TxError struct {
	Index int    // position of the failed op in the ops slice
	RK    string // its RowKey
	Err   error  // the cause, one of the sentinels above where it fits
}

func (e *TxError) Error() string {
	return fmt.Sprintf("transaction op %d (rk %q): %v", e.Index, e.RK, e.Err)
}

func (e *TxError) Unwrap() error { return e.Err }

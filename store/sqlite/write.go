package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// writeStmts are the prepared statements of the write connection.
type writeStmts struct {
	table, ts, row, put, del, clock, setClock *sql.Stmt
	// Conditional writes that check what they depend on in the same
	// statement: an insert that does nothing when the row exists, a
	// replace or delete of the row at a version (or any). Each reports
	// by its rows affected whether it happened; only when it did not is
	// the row read, to say why.
	insert, replace, replaceAt, delAt *sql.Stmt
}

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, db, map[**sql.Stmt]string{
		&w.table: `SELECT id FROM tables WHERE name = ?`,
		&w.ts:    `SELECT ts FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.row:   `SELECT ts, props FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.put: `INSERT INTO entities (tid, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tid, pk, rk) DO UPDATE SET ts = excluded.ts, props = excluded.props`,
		&w.del: `DELETE FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.insert: `INSERT INTO entities (tid, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tid, pk, rk) DO NOTHING`,
		&w.replace:   `UPDATE entities SET ts = ?, props = ? WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.replaceAt: `UPDATE entities SET ts = ?, props = ? WHERE tid = ? AND pk = ? AND rk = ? AND ts = ?`,
		&w.delAt:     `DELETE FROM entities WHERE tid = ? AND pk = ? AND rk = ? AND ts = ?`,
		&w.clock:     `SELECT ticks FROM clock WHERE id = 0`,
		&w.setClock:  `UPDATE clock SET ticks = ? WHERE id = 0`,
	})
}

func prepareAll(ctx context.Context, db *sql.DB, stmts map[**sql.Stmt]string) error {
	for p, text := range stmts {
		var err error
		if *p, err = db.PrepareContext(ctx, text); err != nil {
			return fmt.Errorf("prepare %q: %w", text, err)
		}
	}
	return nil
}

// CreateTable creates a table; ErrTableExists if a table of that name, in
// any case, exists.
func (s *Store) CreateTable(ctx context.Context, table string) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	return s.write(ctx, "create table "+table, func(tx *sql.Tx) error {
		_, err := s.tableID(ctx, tx, table)
		switch {
		case err == nil:
			return fmt.Errorf("table %s: %w", table, store.ErrTableExists)
		case !errors.Is(err, store.ErrTableNotFound):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tables (name) VALUES (?)`, table)
		return err
	})
}

// DeleteTable deletes a table and all its rows.
func (s *Store) DeleteTable(ctx context.Context, table string) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	return s.write(ctx, "delete table "+table, func(tx *sql.Tx) error {
		id, err := s.tableID(ctx, tx, table)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM entities WHERE tid = ?`, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM tables WHERE id = ?`, id)
		return err
	})
}

// tableID looks a table up within a write transaction.
func (s *Store) tableID(ctx context.Context, tx *sql.Tx, table string) (int64, error) {
	var id int64
	err := tx.StmtContext(ctx, s.w.table).QueryRowContext(ctx, table).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("table %s: %w", table, store.ErrTableNotFound)
	}
	return id, err
}

// Transact applies ops atomically in one SQLite transaction. It checks the
// limits first (store.ValidateTx), so it refuses what Azure refuses, then
// applies the ops in order; the first that fails rolls all back. Every row
// a transaction writes gets the transaction's version, so the etags it
// returns are known without reading the rows back; "" for a Delete.
func (s *Store) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	if err := store.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := store.ValidateTx(pk, ops); err != nil {
		return nil, err
	}
	var ts ticks
	err := s.write(ctx, "transact in "+table, func(tx *sql.Tx) error {
		tid, err := s.tableID(ctx, tx, table)
		if err != nil {
			return err
		}
		if ts, err = s.tick(ctx, tx); err != nil {
			return err
		}
		w := txWriter{ctx: ctx, tid: tid, pk: encodeKey(pk), pkText: pk, ts: ts, tx: tx, stmts: &s.w}
		for i, op := range ops {
			if err := w.apply(op); err != nil {
				if isStoreErr(err) {
					return &store.TxError{Index: i, RK: op.RK, Err: err}
				}
				return fmt.Errorf("op %d (rk %q): %w", i, op.RK, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	etags := make([]string, len(ops))
	etag := ts.etag()
	for i, op := range ops {
		if op.Kind != store.Delete {
			etags[i] = etag
		}
	}
	return etags, nil
}

// tick advances the store clock: the version of this transaction's rows,
// strictly after every earlier transaction's, even if the wall clock steps
// back or another process wrote last.
func (s *Store) tick(ctx context.Context, tx *sql.Tx) (ticks, error) {
	var last ticks
	if err := tx.StmtContext(ctx, s.w.clock).QueryRowContext(ctx).Scan(&last); err != nil {
		return 0, err
	}
	ts := max(ticksOf(s.now()), last+1)
	_, err := tx.StmtContext(ctx, s.w.setClock).ExecContext(ctx, ts)
	return ts, err
}

// txWriter applies the ops of one transaction.
type txWriter struct {
	ctx    context.Context
	tid    int64
	pk     []byte
	pkText string
	ts     ticks
	// tx and stmts give the statements, each bound to tx the first time
	// it is used (most transactions use one or two of them).
	tx    *sql.Tx
	stmts *writeStmts
	bound map[*sql.Stmt]*sql.Stmt
}

// stmt returns s bound to the transaction.
func (w *txWriter) stmt(s *sql.Stmt) *sql.Stmt {
	if b, ok := w.bound[s]; ok {
		return b
	}
	if w.bound == nil {
		w.bound = make(map[*sql.Stmt]*sql.Stmt, 2)
	}
	b := w.tx.StmtContext(w.ctx, s)
	w.bound[s] = b
	return b
}

// changed runs a conditional statement and reports whether it changed a
// row.
func (w *txWriter) changed(s *sql.Stmt, args ...any) (bool, error) {
	res, err := w.stmt(s).ExecContext(w.ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (w *txWriter) apply(op store.Op) error {
	rk := encodeKey(op.RK)
	switch op.Kind {
	case store.Upsert:
		return w.write(rk, op.Props)
	case store.Insert:
		ok, err := w.changed(w.stmts.insert, w.tid, w.pk, rk, w.ts, encodeProps(op.Props))
		if err != nil || !ok {
			return errOr(err, store.ErrExists)
		}
		return nil
	case store.Replace, store.Delete:
		return w.replaceOrDelete(op, rk)
	case store.Merge, store.UpsertMerge:
		v, old, ok, err := w.read(rk)
		if err != nil {
			return err
		}
		if !ok {
			if op.Kind == store.Merge {
				return store.ErrNotFound
			}
			return w.write(rk, op.Props)
		}
		if err := checkETag(op.IfMatch, v); err != nil {
			return err
		}
		for name, val := range op.Props {
			old[name] = val
		}
		if err := store.CheckEntityLimits(w.pkText, op.RK, old); err != nil {
			return fmt.Errorf("merged entity: %w", err)
		}
		return w.write(rk, old)
	}
	return fmt.Errorf("unknown operation %v: %w", op.Kind, store.ErrInvalid)
}

// replaceOrDelete replaces or deletes a row that must exist, at the
// version op.IfMatch names unless it is "" or "*", in one statement; the
// row is read only when nothing changed, to tell a missing row from one at
// another version.
func (w *txWriter) replaceOrDelete(op store.Op, rk []byte) error {
	var ok bool
	var err error
	at, anyVersion := parseETag(op.IfMatch)
	switch {
	case op.Kind == store.Delete && anyVersion:
		ok, err = w.changed(w.stmts.del, w.tid, w.pk, rk)
	case op.Kind == store.Delete && at != 0:
		ok, err = w.changed(w.stmts.delAt, w.tid, w.pk, rk, at)
	case anyVersion:
		ok, err = w.changed(w.stmts.replace, w.ts, encodeProps(op.Props), w.tid, w.pk, rk)
	case at != 0:
		ok, err = w.changed(w.stmts.replaceAt, w.ts, encodeProps(op.Props), w.tid, w.pk, rk, at)
	}
	if err != nil || ok {
		return err
	}
	v, exists, err := w.version(rk)
	if err != nil || !exists {
		return errOr(err, store.ErrNotFound)
	}
	if err := checkETag(op.IfMatch, v); err != nil {
		return err
	}
	// Not reached: a row at the version asked for is changed above.
	return fmt.Errorf("etag %s, row is at %s: %w", op.IfMatch, v.etag(), store.ErrPrecondition)
}

// parseETag returns the version an etag names; anyVersion is true for "" and
// "*", which match every version, and at is 0 for text that is not an
// etag of this store, which matches none.
func parseETag(etag string) (at ticks, anyVersion bool) {
	if etag == "" || etag == "*" {
		return 0, true
	}
	s, ok := strings.CutPrefix(etag, `W/"datetime'`)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, `'"`); !ok {
		return 0, false
	}
	t, err := time.Parse(edm.DateTimeLayout, strings.ReplaceAll(s, "%3A", ":"))
	if err != nil {
		return 0, false
	}
	at = ticksOf(t)
	if at.etag() != etag {
		return 0, false
	}
	return at, false
}

func errOr(err, sentinel error) error {
	if err != nil {
		return err
	}
	return sentinel
}

func checkETag(ifMatch string, v ticks) error {
	if ifMatch == "" || ifMatch == "*" || ifMatch == v.etag() {
		return nil
	}
	return fmt.Errorf("etag %s, row is at %s: %w", ifMatch, v.etag(), store.ErrPrecondition)
}

func (w *txWriter) write(rk []byte, props edm.Entity) error {
	_, err := w.stmt(w.stmts.put).ExecContext(w.ctx, w.tid, w.pk, rk, w.ts, encodeProps(props))
	return err
}

// version reads the version of a row; ok is false if it does not exist.
func (w *txWriter) version(rk []byte) (v ticks, ok bool, err error) {
	err = w.stmt(w.stmts.ts).QueryRowContext(w.ctx, w.tid, w.pk, rk).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// read reads a row's version and properties.
func (w *txWriter) read(rk []byte) (v ticks, props edm.Entity, ok bool, err error) {
	var blob []byte
	err = w.stmt(w.stmts.row).QueryRowContext(w.ctx, w.tid, w.pk, rk).Scan(&v, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	props, err = decodeProps(blob)
	return v, props, err == nil, err
}

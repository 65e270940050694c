package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// writeStmts are the prepared statements of the write connection.
type writeStmts struct {
	table, ts, row, put, del, clock, setClock *sql.Stmt
}

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, db, map[**sql.Stmt]string{
		&w.table: `SELECT id FROM tables WHERE name = ?`,
		&w.ts:    `SELECT ts FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.row:   `SELECT ts, props FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.put: `INSERT INTO entities (tid, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (tid, pk, rk) DO UPDATE SET ts = excluded.ts, props = excluded.props`,
		&w.del:      `DELETE FROM entities WHERE tid = ? AND pk = ? AND rk = ?`,
		&w.clock:    `SELECT ticks FROM clock WHERE id = 0`,
		&w.setClock: `UPDATE clock SET ticks = ? WHERE id = 0`,
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
		w := txWriter{ctx: ctx, tid: tid, pk: encodeKey(pk), pkText: pk, ts: ts,
			ts1: tx.StmtContext(ctx, s.w.ts), row: tx.StmtContext(ctx, s.w.row),
			put: tx.StmtContext(ctx, s.w.put), del: tx.StmtContext(ctx, s.w.del)}
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
	ctx                context.Context
	tid                int64
	pk                 []byte
	pkText             string
	ts                 ticks
	ts1, row, put, del *sql.Stmt
}

func (w *txWriter) apply(op store.Op) error {
	rk := encodeKey(op.RK)
	switch op.Kind {
	case store.Upsert:
		return w.write(rk, op.Props)
	case store.Insert:
		if _, ok, err := w.version(rk); err != nil || ok {
			return errOr(err, store.ErrExists)
		}
		return w.write(rk, op.Props)
	case store.Replace, store.Delete:
		v, ok, err := w.version(rk)
		if err != nil || !ok {
			return errOr(err, store.ErrNotFound)
		}
		if err := checkETag(op.IfMatch, v); err != nil {
			return err
		}
		if op.Kind == store.Delete {
			_, err := w.del.ExecContext(w.ctx, w.tid, w.pk, rk)
			return err
		}
		return w.write(rk, op.Props)
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
	_, err := w.put.ExecContext(w.ctx, w.tid, w.pk, rk, w.ts, encodeProps(props))
	return err
}

// version reads the version of a row; ok is false if it does not exist.
func (w *txWriter) version(rk []byte) (v ticks, ok bool, err error) {
	err = w.ts1.QueryRowContext(w.ctx, w.tid, w.pk, rk).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// read reads a row's version and properties.
func (w *txWriter) read(rk []byte) (v ticks, props edm.Entity, ok bool, err error) {
	var blob []byte
	err = w.row.QueryRowContext(w.ctx, w.tid, w.pk, rk).Scan(&v, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	props, err = decodeProps(blob)
	return v, props, err == nil, err
}

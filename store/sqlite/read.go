package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/store"
)

// readStmts are the prepared statements of the read pool.
type readStmts struct {
	table, get, list *sql.Stmt
	firstPK, nextPK  *sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, db, map[**sql.Stmt]string{
		&r.table: `SELECT id FROM tables WHERE name = ?`,
		// One statement tells a missing table (no row) from a missing
		// entity (a row of NULLs).
		&r.get: `SELECT e.ts, e.props FROM tables t
			LEFT JOIN entities e ON e.tid = t.id AND e.pk = ? AND e.rk = ?
			WHERE t.name = ?`,
		&r.list: `SELECT name FROM tables`,
		// One index seek per partition (a skip scan), whatever its rows.
		&r.firstPK: `SELECT pk FROM entities WHERE tid = ? ORDER BY pk LIMIT 1`,
		&r.nextPK:  `SELECT pk FROM entities WHERE tid = ? AND pk > ? ORDER BY pk LIMIT 1`,
	})
}

// ListTables returns the names of all tables, as created, sorted.
func (s *Store) ListTables(ctx context.Context) ([]string, error) {
	rows, err := s.r.list.QueryContext(ctx)
	if err != nil {
		return nil, wrap(ctx, "list tables", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, wrap(ctx, "list tables", err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(ctx, "list tables", err)
	}
	slices.Sort(names)
	return names, nil
}

// Get reads one entity.
func (s *Store) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if err := store.ValidateTableName(table); err != nil {
		return store.Entity{}, err
	}
	for _, k := range []string{pk, rk} {
		if err := store.ValidateKey(k); err != nil {
			return store.Entity{}, err
		}
	}
	var (
		ts   sql.Null[ticks]
		blob []byte
	)
	err := s.r.get.QueryRowContext(ctx, encodeKey(pk), encodeKey(rk), table).Scan(&ts, &blob)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Entity{}, fmt.Errorf("table %s: %w", table, store.ErrTableNotFound)
	case err != nil:
		return store.Entity{}, wrap(ctx, "get", err)
	case !ts.Valid:
		return store.Entity{}, fmt.Errorf("%s (%q, %q): %w", table, pk, rk, store.ErrNotFound)
	}
	props, err := decodeProps(blob)
	if err != nil {
		return store.Entity{}, fmt.Errorf("sqlite get %s (%q, %q): %w", table, pk, rk, err)
	}
	return store.Entity{PK: pk, RK: rk, Props: props, ETag: ts.V.etag(), Timestamp: ts.V.time()}, nil
}

// Limits implements store.Store: Azure Tables' own, no more.
func (s *Store) Limits() events.Limits { return events.Limits{} }

// Partitions implements store.Store: one index seek per
// partition.
func (s *Store) Partitions(ctx context.Context, table string, fn func(pk string) error) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	var tid int64
	if err := s.r.table.QueryRowContext(ctx, table).Scan(&tid); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("table %s: %w", table, store.ErrTableNotFound)
	} else if err != nil {
		return wrap(ctx, "partitions", err)
	}
	var pk []byte
	err := s.r.firstPK.QueryRowContext(ctx, tid).Scan(&pk)
	for err == nil {
		key := decodeKey(pk)
		if err := fn(key); err != nil {
			return err
		}
		// Not pk itself: the empty key scans as a nil slice, which binds as
		// NULL.
		err = s.r.nextPK.QueryRowContext(ctx, tid, encodeKey(key)).Scan(&pk)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	return wrap(ctx, "partitions", err)
}

// scanShape selects the statement of a range scan: which bounds it has.
type scanShape struct {
	partition, from, to, after, limit bool
}

func (sh scanShape) sql() string {
	var b strings.Builder
	b.WriteString("SELECT pk, rk, ts, props FROM entities WHERE tid = ?")
	if sh.partition {
		b.WriteString(" AND pk = ?")
	}
	if sh.from {
		b.WriteString(" AND rk >= ?")
	}
	if sh.to {
		b.WriteString(" AND rk < ?")
	}
	if sh.after {
		b.WriteString(" AND (pk, rk) > (?, ?)")
	}
	b.WriteString(" ORDER BY pk, rk")
	if sh.limit {
		b.WriteString(" LIMIT ?")
	}
	return b.String()
}

func (s *Store) scanStmt(ctx context.Context, sh scanShape) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.scans[sh]; ok {
		return st, nil
	}
	st, err := s.rdb.PrepareContext(ctx, sh.sql())
	if err != nil {
		return nil, err
	}
	s.scans[sh] = st
	return st, nil
}

// Query returns the next page of entities matching q. Rows are read in key
// order and the filter is applied here, so a page is cut only once it holds
// q.Limit matches or the range is exhausted.
func (s *Store) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	if err := store.ValidateTableName(table); err != nil {
		return store.Page{}, err
	}
	if err := store.ValidateQuery(q); err != nil {
		return store.Page{}, err
	}
	sh := scanShape{partition: !q.AllPartitions, from: q.From != "", to: q.To != "", after: q.Continuation != "", limit: len(q.Filter) == 0}
	var afterPK, afterRK string
	if sh.after {
		var err error
		if afterPK, afterRK, err = decodeToken(q.Continuation); err != nil {
			return store.Page{}, err
		}
	}
	limit := store.PageSize(q.Limit)
	stmt, err := s.scanStmt(ctx, sh)
	if err != nil {
		return store.Page{}, wrap(ctx, "query", err)
	}

	// One read transaction: the table lookup and the scan see one snapshot.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.Page{}, wrap(ctx, "query", err)
	}
	defer tx.Rollback()
	var tid int64
	if err := tx.StmtContext(ctx, s.r.table).QueryRowContext(ctx, table).Scan(&tid); errors.Is(err, sql.ErrNoRows) {
		return store.Page{}, fmt.Errorf("table %s: %w", table, store.ErrTableNotFound)
	} else if err != nil {
		return store.Page{}, wrap(ctx, "query", err)
	}

	args := []any{tid}
	if sh.partition {
		args = append(args, encodeKey(q.PK))
	}
	if sh.from {
		args = append(args, encodeKey(q.From))
	}
	if sh.to {
		args = append(args, encodeKey(q.To))
	}
	if sh.after {
		args = append(args, encodeKey(afterPK), encodeKey(afterRK))
	}
	if sh.limit {
		args = append(args, limit+1) // one more tells whether there is a next page
	}
	page, err := scan(ctx, tx.StmtContext(ctx, stmt), args, q.Filter, limit)
	if err != nil {
		return store.Page{}, wrap(ctx, "query", err)
	}
	return page, nil
}

func scan(ctx context.Context, stmt *sql.Stmt, args []any, filter []store.Cond, limit int) (store.Page, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return store.Page{}, err
	}
	defer rows.Close()
	var (
		page     store.Page
		pkb, rkb []byte
		ts       ticks
		blob     []byte
	)
	for rows.Next() {
		if len(page.Entities) == limit {
			// A row beyond a full page: there is more to read.
			last := page.Entities[limit-1]
			page.Continuation = encodeToken(last.PK, last.RK)
			break
		}
		blob = nil // a fresh buffer per row: Binary values share it
		if err := rows.Scan(&pkb, &rkb, &ts, &blob); err != nil {
			return store.Page{}, err
		}
		props, err := decodeProps(blob)
		if err != nil {
			return store.Page{}, err
		}
		if !store.MatchFilter(props, filter) {
			continue
		}
		page.Entities = append(page.Entities, store.Entity{
			PK: decodeKey(pkb), RK: decodeKey(rkb), Props: props, ETag: ts.etag(), Timestamp: ts.time(),
		})
	}
	return page, rows.Err()
}

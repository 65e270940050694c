// Package orders is an example service on package tablejournal: an HTTP
// API over an "orders" table whose rows are orders, partitioned by
// customer. It creates an order (POST), updates it under optimistic
// concurrency (PUT with If-Match: the version it read), reads its own
// writes (GET with ?after=<journal sequence>, which every write returns
// in the X-Journal-Seq header), and keeps a running count of orders by
// status from the change feed (Counter).
//
// It imports only package tablejournal of this module.
package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/tablejournal/tablejournal"
)

// Table is the table of orders.
const Table = "orders"

// Order is an order as the API reads and writes it.
type Order struct {
	ID       string  `json:"id"`
	Customer string  `json:"customer"`
	Status   string  `json:"status"`
	Total    float64 `json:"total"`
	// Version is the order row's version: send it back in If-Match.
	Version int64 `json:"version"`
}

// Service serves the API through c.
type Service struct {
	c *tablejournal.Client
}

// New returns the service on client c.
func New(c *tablejournal.Client) *Service { return &Service{c: c} }

// Handler routes the API:
//
//	POST /orders/{customer}        {"id","status","total"}  → 201, 409 if it exists
//	PUT  /orders/{customer}/{id}   If-Match: version         → 200, 404, 412 on a stale version
//	GET  /orders/{customer}/{id}?after=seq                   → 200, 404
//	GET  /orders/{customer}?after=seq                        → 200, the customer's orders
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders/{customer}", s.create)
	mux.HandleFunc("PUT /orders/{customer}/{id}", s.update)
	mux.HandleFunc("GET /orders/{customer}/{id}", s.get)
	mux.HandleFunc("GET /orders/{customer}", s.list)
	return mux
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) {
	var o Order
	if err := decode(r, &o); err != nil || o.ID == "" {
		http.Error(w, fmt.Sprintf("body: want {\"id\",\"status\",\"total\"}: %v", err), http.StatusBadRequest)
		return
	}
	o.Customer = r.PathValue("customer")
	cmd := tablejournal.NewCommand(Table, o.Customer).Insert(o.ID, entity(o))
	s.apply(w, r, cmd, http.StatusCreated)
}

func (s *Service) update(w http.ResponseWriter, r *http.Request) {
	var o Order
	if err := decode(r, &o); err != nil {
		http.Error(w, fmt.Sprintf("body: want {\"status\",\"total\"}: %v", err), http.StatusBadRequest)
		return
	}
	version, err := strconv.ParseInt(r.Header.Get("If-Match"), 10, 64)
	if err != nil {
		http.Error(w, "If-Match: want the version read", http.StatusPreconditionRequired)
		return
	}
	o.Customer, o.ID = r.PathValue("customer"), r.PathValue("id")
	cmd := tablejournal.NewCommand(Table, o.Customer).Replace(o.ID, entity(o)).IfVersion(version)
	s.apply(w, r, cmd, http.StatusOK)
}

// decode reads a JSON body into v and refuses a field v does not have: a
// misspelled "totl" is a 400 naming it, not an order saved without a total.
func decode(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// apply publishes cmd, waits for its outcome and answers with the order's
// new version and the command's journal sequence.
func (s *Service) apply(w http.ResponseWriter, r *http.Request, cmd *tablejournal.Command, status int) {
	out, err := s.c.Apply(r.Context(), cmd)
	switch {
	case errors.Is(err, tablejournal.ErrExists):
		http.Error(w, "order exists", http.StatusConflict)
	case errors.Is(err, tablejournal.ErrVersionMismatch):
		http.Error(w, "order changed since that version", http.StatusPreconditionFailed)
	case errors.Is(err, tablejournal.ErrNotFound):
		http.Error(w, "no such order", http.StatusNotFound)
	case errors.Is(err, tablejournal.ErrInvalid):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("X-Journal-Seq", strconv.FormatUint(out.Seq, 10))
		w.Header().Set("ETag", strconv.FormatInt(out.Rows[0].Version, 10))
		w.WriteHeader(status)
	}
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) {
	opts, ok := after(w, r)
	if !ok {
		return
	}
	row, err := s.c.Get(r.Context(), Table, r.PathValue("customer"), r.PathValue("id"), opts...)
	if errors.Is(err, tablejournal.ErrNotFound) {
		http.Error(w, "no such order", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("ETag", strconv.FormatInt(row.Version, 10))
	writeJSON(w, order(row))
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) {
	opts, ok := after(w, r)
	if !ok {
		return
	}
	rows, err := s.c.Partition(r.Context(), Table, r.PathValue("customer"), opts...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := []Order{}
	for _, row := range rows {
		list = append(list, order(row))
	}
	writeJSON(w, list)
}

// after reads ?after=seq: a read that waits for that write.
func after(w http.ResponseWriter, r *http.Request) ([]tablejournal.ReadOption, bool) {
	v := r.URL.Query().Get("after")
	if v == "" {
		return nil, true
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		http.Error(w, "after: want a journal sequence", http.StatusBadRequest)
		return nil, false
	}
	return []tablejournal.ReadOption{tablejournal.AfterSeq(seq)}, true
}

func entity(o Order) tablejournal.Entity {
	return tablejournal.Entity{"status": tablejournal.String(o.Status), "total": tablejournal.Double(o.Total)}
}

func order(r tablejournal.Row) Order {
	return Order{ID: r.RK, Customer: r.PK, Status: r.Entity["status"].Str, Total: r.Entity["total"].Float, Version: r.Version}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Warn("write response", "err", err)
	}
}

// Counter counts orders by status from the change feed: a change-feed
// consumer with a durable checkpoint, so a restart resumes where it was.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
	seen   int
}

// Run follows the orders table under checkpoint name until ctx ends.
func (k *Counter) Run(ctx context.Context, c *tablejournal.Client, name string) error {
	return c.Follow(ctx, name, Table, func(_ context.Context, ch tablejournal.Change) error {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.counts == nil {
			k.counts = map[string]int{}
		}
		if ch.Before != nil {
			k.counts[ch.Before["status"].Str]--
		}
		if ch.After != nil {
			k.counts[ch.After["status"].Str]++
		}
		k.seen++
		return nil
	})
}

// Counts returns the number of orders by status and how many changes it
// has taken.
func (k *Counter) Counts() (map[string]int, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for s, n := range k.counts {
		if n != 0 {
			out[s] = n
		}
	}
	return out, k.seen
}

// ServeCounts serves the counts as JSON: {"counts":{…},"changes":n}.
func (k *Counter) ServeCounts(w http.ResponseWriter, _ *http.Request) {
	counts, seen := k.Counts()
	writeJSON(w, map[string]any{"counts": counts, "changes": seen})
}

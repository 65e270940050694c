package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/internal/pagetoken"
)

var _ store.Store = (*Store)(nil)

// Store is a store.Store on an Azure Tables service. It is safe for
// concurrent use.
type Store struct {
	svc      *aztables.ServiceClient
	emulator bool
	limits   events.Limits // the zero Limits, or events.CosmosLimits
	secrets  []string      // never to appear in an error
	mode     azauth.Mode   // how requests authenticate
	service  azauth.Service
}

// New returns a Store for the service cfg selects. It does not contact the
// service.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	acct, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{
			MaxRetries:    int32(cfg.MaxRetries),
			RetryDelay:    cfg.RetryDelay,
			MaxRetryDelay: cfg.MaxRetryDelay,
			TryTimeout:    cfg.TryTimeout,
			// Exactly the transient statuses; the SDK's default adds 502.
			StatusCodes: []int{
				http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
				http.StatusServiceUnavailable, http.StatusGatewayTimeout,
			},
		},
		Telemetry:       policy.TelemetryOptions{ApplicationID: "tablejournal"},
		PerCallPolicies: []policy.Policy{batchKeyPolicy{}},
	}}
	auth := cfg.auth()
	mode, err := auth.Choose(acct.endpoint, acct.key != "", acct.sas != "")
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	opts.Transport = cfg.Transport
	if opts.Transport == nil {
		if opts.Transport, err = auth.Transport(); err != nil {
			return nil, fmt.Errorf("azure: %w", err)
		}
	}
	s := &Store{
		emulator: cfg.Emulator || acct.name == devAccountName || acct.local,
		limits:   limitsOf(cfg.Cosmos),
		secrets:  secretsOf(acct),
		mode:     mode,
		service:  azauth.Tables,
	}
	if cfg.Cosmos {
		s.service = azauth.CosmosTables
	}
	switch mode {
	case azauth.Key:
		cred, err := aztables.NewSharedKeyCredential(acct.name, acct.key)
		if err != nil {
			return nil, errors.New("azure: the account key is not valid base64")
		}
		s.svc, err = aztables.NewServiceClientWithSharedKey(acct.endpoint, cred, opts)
		if err != nil {
			return nil, s.transportError("connect", err)
		}
	case azauth.Login:
		cred, err := auth.TokenCredential(opts.Transport)
		if err != nil {
			return nil, fmt.Errorf("azure: %w", err)
		}
		s.svc, err = aztables.NewServiceClient(acct.endpoint, cred, opts)
		if err != nil {
			return nil, s.transportError("connect", err)
		}
	default:
		s.svc, err = aztables.NewServiceClientWithNoCredential(acct.endpoint+"/?"+acct.sas, opts)
		if err != nil {
			return nil, s.transportError("connect", err)
		}
	}
	return s, nil
}

// Mode returns how the store authenticates: with the account key, a SAS
// token, or signed in with Microsoft Entra ID.
func (s *Store) Mode() azauth.Mode { return s.mode }

// Close releases nothing: the SDK's HTTP client needs no closing. It exists
// so that callers can treat every backend alike.
func (s *Store) Close() error { return nil }

// CreateTable implements store.Store.
func (s *Store) CreateTable(ctx context.Context, table string) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	_, err := s.svc.CreateTable(ctx, table, nil)
	return s.wrap("create table "+table, err, tableOp)
}

// DeleteTable implements store.Store.
func (s *Store) DeleteTable(ctx context.Context, table string) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	_, err := s.svc.DeleteTable(ctx, table, nil)
	return s.wrap("delete table "+table, err, tableOp)
}

// ListTables implements store.Store.
func (s *Store) ListTables(ctx context.Context) ([]string, error) {
	var names []string
	pager := s.svc.NewListTablesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, s.wrap("list tables", err, tableOp)
		}
		for _, t := range page.Tables {
			if t != nil && t.Name != nil {
				names = append(names, *t.Name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	if err := store.ValidateTableName(table); err != nil {
		return store.Entity{}, err
	}
	for _, k := range []string{pk, rk} {
		if err := store.ValidateKey(k); err != nil {
			return store.Entity{}, err
		}
	}
	op := "get " + table
	if pk == "" {
		// The SDK refuses an empty PartitionKey in a point read's URL;
		// a query for the one row reads the same.
		return s.getByQuery(ctx, op, table, pk, rk)
	}
	var raw *http.Response
	resp, err := s.svc.NewClient(table).GetEntity(policy.WithCaptureResponse(ctx, &raw), pk, rk, nil)
	if err != nil {
		return store.Entity{}, s.wrap(op, err, entityOp)
	}
	body, err := runtime.Payload(raw)
	if err != nil {
		return store.Entity{}, s.transportError(op, err)
	}
	e, err := decodeEntity(body)
	if err != nil {
		return store.Entity{}, fmt.Errorf("azure: %s: %w", op, err)
	}
	if resp.ETag != "" {
		e.ETag = string(resp.ETag)
	}
	return e, nil
}

func (s *Store) getByQuery(ctx context.Context, op, table, pk, rk string) (store.Entity, error) {
	filter := "PartitionKey eq " + quote(pk) + " and RowKey eq " + quote(rk)
	ents, _, err := s.queryPage(ctx, op, table, filter, "", 1, nil, nil)
	if err != nil {
		return store.Entity{}, err
	}
	if len(ents) == 0 {
		return store.Entity{}, fmt.Errorf("azure: %s: %w", op, store.ErrNotFound)
	}
	return ents[0], nil
}

// Query implements store.Store.
func (s *Store) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	if err := store.ValidateTableName(table); err != nil {
		return store.Page{}, err
	}
	if err := store.ValidateQuery(q); err != nil {
		return store.Page{}, err
	}
	next, err := decodeContinuation(q.Continuation)
	if err != nil {
		return store.Page{}, err
	}
	op := "query " + table
	filter := buildFilter(q, s.emulator)
	top := int32(store.PageSize(q.Limit))
	for {
		ents, cont, err := s.queryPage(ctx, op, table, filter, "", top, next.PK, next.RK)
		if err != nil {
			return store.Page{}, err
		}
		page := store.Page{Entities: ents[:0]}
		for _, e := range ents {
			if store.MatchFilter(e.Props, q.Filter) {
				page.Entities = append(page.Entities, e)
			}
		}
		if cont == nil {
			return page, nil
		}
		if len(page.Entities) > 0 {
			page.Continuation = cont.encode()
			return page, nil
		}
		// An empty page with a continuation: Azure ends a page at a
		// partition boundary or after 5 s of scanning even if it found
		// nothing. Keep going.
		next = *cont
	}
}

// queryPage sends one query request and returns its entities and the
// continuation, nil at the end of the range. sel, if not empty, is the
// $select list of properties.
func (s *Store) queryPage(ctx context.Context, op, table, filter, sel string, top int32, npk, nrk *string) ([]store.Entity, *continuation, error) {
	opts := &aztables.ListEntitiesOptions{Top: &top, NextPartitionKey: npk, NextRowKey: nrk}
	if filter != "" {
		opts.Filter = &filter
	}
	if sel != "" {
		opts.Select = &sel
	}
	var raw *http.Response
	resp, err := s.svc.NewClient(table).NewListEntitiesPager(opts).NextPage(policy.WithCaptureResponse(ctx, &raw))
	if err != nil {
		return nil, nil, s.wrap(op, err, tableOp)
	}
	body, err := runtime.Payload(raw)
	if err != nil {
		return nil, nil, s.transportError(op, err)
	}
	ents, err := decodeEntities(body)
	if err != nil {
		return nil, nil, fmt.Errorf("azure: %s: %w", op, err)
	}
	var cont *continuation
	if nonEmpty(resp.NextPartitionKey) || nonEmpty(resp.NextRowKey) {
		cont = &continuation{PK: resp.NextPartitionKey, RK: resp.NextRowKey}
		if !nonEmpty(cont.PK) {
			// The next row is in the partition with the empty key: Azurite
			// sends no NextPartitionKey then, and without one it does not
			// resume at NextRowKey. Say the empty key explicitly.
			empty := ""
			cont.PK = &empty
		}
	}
	return ents, cont, nil
}

// limitsOf returns the limits of Cosmos DB for Table when cosmos is set,
// else none beyond Azure's.
func limitsOf(cosmos bool) events.Limits {
	if cosmos {
		return events.CosmosLimits
	}
	return events.Limits{}
}

// Limits implements store.Store.
func (s *Store) Limits() events.Limits { return s.limits }

// Partitions implements store.Store with a skip scan: per partition, one
// query for the first key after the last one listed (PartitionKey gt '…',
// $top=1, only the keys selected), which the service answers from its
// index. Continuations of empty pages are followed. On Cosmos DB for
// Table, whose answers are not sorted, the query reads a page of up to
// 1,000 keys and takes the least, then asks again below it until nothing
// is left there (store.Least's form): correct in any order, one request
// more per partition.
func (s *Store) Partitions(ctx context.Context, table string, fn func(pk string) error) error {
	if err := store.ValidateTableName(table); err != nil {
		return err
	}
	op := "partitions " + table
	filter := ""
	for {
		pk, ok, err := s.nextPartition(ctx, op, table, filter)
		if err != nil || !ok {
			return err
		}
		if err := fn(pk); err != nil {
			return err
		}
		filter = "PartitionKey gt " + quote(pk)
	}
}

// nextPartition returns the least PartitionKey of the entities filter
// selects; ok is false when there are none.
func (s *Store) nextPartition(ctx context.Context, op, table, filter string) (pk string, ok bool, err error) {
	unsorted := s.limits.Service != ""
	top := int32(1)
	if unsorted {
		top = store.DefaultPageSize
	}
	for {
		var (
			ents     []store.Entity
			npk, nrk *string
		)
		for {
			var cont *continuation
			ents, cont, err = s.queryPage(ctx, op, table, filter, "PartitionKey,RowKey", top, npk, nrk)
			if err != nil {
				return "", false, err
			}
			if len(ents) > 0 || cont == nil {
				break
			}
			npk, nrk = cont.PK, cont.RK
		}
		if len(ents) == 0 {
			return pk, ok, nil
		}
		least := ents[0].PK
		for _, e := range ents[1:] {
			if store.CompareKeys(e.PK, least) < 0 {
				least = e.PK
			}
		}
		pk, ok = least, true
		if !unsorted {
			return pk, ok, nil
		}
		below := "PartitionKey lt " + quote(least)
		if filter != "" {
			below = "(" + filter + ") and " + below
		}
		filter = below
	}
}

func nonEmpty(p *string) bool { return p != nil && *p != "" }

// continuation is the service's NextPartitionKey / NextRowKey pair, carried
// opaquely in Page.Continuation as base64url JSON.
type continuation struct {
	PK *string `json:"pk,omitempty"`
	RK *string `json:"rk,omitempty"`
}

func (c continuation) encode() string { return pagetoken.Encode(c) }

func decodeContinuation(s string) (continuation, error) {
	var c continuation
	if s == "" {
		return c, nil
	}
	if err := pagetoken.Decode(s, &c); err != nil || (c.PK == nil && c.RK == nil) {
		return continuation{}, fmt.Errorf("azure: continuation token %q is not one of this store's: %w", s, store.ErrInvalid)
	}
	return c, nil
}

package projection

import (
	"container/list"
	"sync"
)

// rowCache remembers the state of rows the projector wrote, so a hot row is
// not read back before every command. It is bounded (least recently used
// rows are dropped) so memory stays flat however many rows a table has.
// Tips in the cache carry no etag: the store does not return the etags a
// transaction produced, so tip writes from cached state use If-Match "*"
// (the row must still exist) and version rows are inserted, which fails if
// anyone else wrote that history.
type rowCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[rowKey]*list.Element
}

type rowKey struct{ table, pk, rk string }

type cacheItem struct {
	key   rowKey
	state rowState
}

func newRowCache(max int) *rowCache {
	return &rowCache{max: max, ll: list.New(), items: make(map[rowKey]*list.Element)}
}

func (c *rowCache) get(k rowKey) (*rowState, bool) {
	if c == nil || c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	s := el.Value.(*cacheItem).state
	return &s, true
}

func (c *rowCache) put(k rowKey, s rowState) {
	if c == nil || c.max <= 0 {
		return
	}
	if s.tip != nil && s.tip.ETag != "" {
		t := *s.tip
		t.ETag = ""
		s.tip = &t
		if s.latest != nil && s.latest.Tip {
			s.latest = &t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value.(*cacheItem).state = s
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheItem{key: k, state: s})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}

// dropPartition forgets every cached row of one partition.
func (c *rowCache) dropPartition(table, pk string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.items {
		if k.table == table && k.pk == pk {
			c.ll.Remove(el)
			delete(c.items, k)
		}
	}
}

// clear forgets every cached row.
func (c *rowCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	clear(c.items)
}

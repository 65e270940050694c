package projection

import (
	"container/list"
	"sync"
)

// rowCache remembers the state of rows the projector read or wrote, so a
// hot row is not read back before every command. It is bounded (least
// recently used rows are dropped) so memory stays flat however many rows a
// table has.
//
// The cache never outvotes the table. Its rows are valid only together with
// the fence of their partition they were read or written under: each
// partition's entry holds that fence and an epoch, and a row is returned
// only if it carries its partition's current epoch. A transaction decided on
// cached rows writes the fence on its etag, so it fails if anyone wrote the
// partition since; the partition's entry is then dropped (which drops all
// its rows at once) and the rows are read from the table again.
//
// Tips the projector wrote are cached without their etag (it keeps only
// the fence's etag of a transaction): tip writes from cached state use
// If-Match "*", and the fence is what makes them safe.
type rowCache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[rowKey]*list.Element
	parts map[partKey]*list.Element
	pl    *list.List
}

type rowKey struct{ table, pk, rk string }

type partKey struct{ table, pk string }

type cacheItem struct {
	key   rowKey
	state rowState
	epoch uint64
}

type partItem struct {
	key   partKey
	fence fence
	epoch uint64
}

func newRowCache(max int) *rowCache {
	return &rowCache{max: max, ll: list.New(), items: make(map[rowKey]*list.Element),
		parts: make(map[partKey]*list.Element), pl: list.New()}
}

// maxParts bounds the partitions whose fence the cache keeps.
func (c *rowCache) maxParts() int { return max(1024, c.max/4) }

// get returns a row's cached state if it was cached under epoch.
func (c *rowCache) get(k rowKey, epoch uint64) (*rowState, bool) {
	if c == nil || c.max <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok || el.Value.(*cacheItem).epoch != epoch {
		return nil, false
	}
	c.ll.MoveToFront(el)
	s := el.Value.(*cacheItem).state
	return &s, true
}

// put caches a row's state under epoch.
func (c *rowCache) put(k rowKey, s rowState, epoch uint64) {
	if c == nil || c.max <= 0 {
		return
	}
	if s.Tip != nil && s.Tip.ETag != "" {
		t := *s.Tip
		t.ETag = ""
		s.Tip = &t
		if s.Latest != nil && s.Latest.Tip {
			s.Latest = &t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		it := el.Value.(*cacheItem)
		it.state, it.epoch = s, epoch
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheItem{key: k, state: s, epoch: epoch})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}

// fence returns the fence a partition's cached rows are valid with, and
// their epoch.
func (c *rowCache) fence(k partKey) (fence, uint64, bool) {
	if c == nil || c.max <= 0 {
		return fence{}, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.parts[k]
	if !ok {
		return fence{}, 0, false
	}
	c.pl.MoveToFront(el)
	it := el.Value.(*partItem)
	return it.fence, it.epoch, true
}

// setFence records the fence of a partition's rows cached under epoch.
func (c *rowCache) setFence(k partKey, f fence, epoch uint64) {
	if c == nil || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.parts[k]; ok {
		it := el.Value.(*partItem)
		it.fence, it.epoch = f, epoch
		c.pl.MoveToFront(el)
		return
	}
	c.parts[k] = c.pl.PushFront(&partItem{key: k, fence: f, epoch: epoch})
	for c.pl.Len() > c.maxParts() {
		last := c.pl.Back()
		c.pl.Remove(last)
		delete(c.parts, last.Value.(*partItem).key)
	}
}

// dropPartition forgets a partition's fence, and so every cached row of
// it: rows of an epoch no partition entry holds are never returned.
func (c *rowCache) dropPartition(k partKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.parts[k]; ok {
		c.pl.Remove(el)
		delete(c.parts, k)
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

// Package lru is a cache bounded by the bytes of what it holds: the least
// recently used entries are dropped once a new one would take it over its
// budget. Results computed on demand from content that never changes (an
// email's HTML check, its preview images) are kept here rather than in the
// store: recomputing one after a restart, or on another replica, costs less
// than a table, a migration and its cleanup.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values of a known size. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  *list.List // front: most recently used; elements hold *entry[K, V]
	items  map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key  K
	val  V
	size int64
}

// New returns a cache that holds at most budget bytes of values, as their
// sizes are given to Put.
func New[K comparable, V any](budget int64) *Cache[K, V] {
	return &Cache[K, V]{budget: budget, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of key and whether it was cached, and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).val, true
}

// Put caches val under key with its size in bytes, replacing any value the
// key had, and drops the least recently used entries until the cache is
// within its budget. A value larger than the whole budget is not kept.
func (c *Cache[K, V]) Put(key K, val V, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	if size > c.budget {
		return
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, val: val, size: size})
	c.used += size
	for c.used > c.budget {
		c.remove(c.order.Back())
	}
}

func (c *Cache[K, V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry[K, V])
	delete(c.items, e.key)
	c.used -= e.size
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Bytes is the sum of the sizes of the entries held.
func (c *Cache[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

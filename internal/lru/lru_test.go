package lru

import (
	"fmt"
	"sync"
	"testing"
)

func TestEvictsLeastRecentlyUsedWithinBudget(t *testing.T) {
	c := New[string, int](10)
	c.Put("a", 1, 4)
	c.Put("b", 2, 4)
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.Put("c", 3, 4) // 12 > 10: b, the least recently used, goes
	if _, ok := c.Get("b"); ok {
		t.Error("b kept past the budget")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s dropped", k)
		}
	}
	if c.Bytes() != 8 || c.Len() != 2 {
		t.Errorf("bytes %d, len %d; want 8, 2", c.Bytes(), c.Len())
	}
}

func TestReplaceAndOversize(t *testing.T) {
	c := New[string, string](10)
	c.Put("a", "x", 3)
	c.Put("a", "y", 5)
	if v, _ := c.Get("a"); v != "y" || c.Bytes() != 5 {
		t.Errorf("got %q with %d bytes; want y with 5", v, c.Bytes())
	}
	c.Put("big", "z", 11)
	if _, ok := c.Get("big"); ok {
		t.Error("a value over the whole budget was kept")
	}
	if _, ok := c.Get("a"); !ok {
		t.Error("an oversize value evicted what was there")
	}
}

func TestConcurrentUse(t *testing.T) {
	c := New[string, int](100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := fmt.Sprint(g, i%20)
				c.Put(k, i, 3)
				c.Get(k)
			}
		}()
	}
	wg.Wait()
	if c.Bytes() > 100 || int64(c.Len())*3 != c.Bytes() {
		t.Errorf("bytes %d for %d entries", c.Bytes(), c.Len())
	}
}

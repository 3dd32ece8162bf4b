package store_test

import (
	"context"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

func TestPrefixUpperBound(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"abc", "abd", true},
		{"ab\xff", "ac", true},
		{"a\xff\xff", "b", true},
		{"+1555", "+1556", true},
		{"\xff\xff", "", false},
		{"", "", false},
	} {
		got, ok := store.PrefixUpperBound(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("PrefixUpperBound(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// An escaped value matches itself in LIKE on both stores, wildcards and
// backslashes included, and nothing its wildcards would have matched.
func TestEscapeLike(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, c := range []struct {
			value, text string
			want        bool
		}{
			{"50%_off", "get 50%_off now", true},
			{"50%_off", "get 50 percent off", false},
			{"a_c", "abc", false},
			{`C:\dir`, `in C:\dir\x`, true},
			{`C:\dir`, `in C:dir`, false},
			{`100\%`, `100\%`, true},
			{`100\%`, `100%`, false},
		} {
			var n int
			if err := db.QueryRow(ctx, `SELECT COUNT(*) WHERE ? LIKE ? ESCAPE '\'`, c.text, "%"+store.EscapeLike(c.value)+"%").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if got := n == 1; got != c.want {
				t.Errorf("%q LIKE %%%s%%: %v, want %v", c.text, store.EscapeLike(c.value), got, c.want)
			}
		}
	})
}

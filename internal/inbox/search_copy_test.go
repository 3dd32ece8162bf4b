package inbox

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// columnFixture is a SQLite store with two namespaces whose emails are written
// row by row, with chosen times, as the ingester writes them, and searched by
// a Searcher with the copies in memory (package index, whose own tests cover
// the copies) and one without.
type columnFixture struct {
	t      *testing.T
	db     *store.DB
	ns     [2]tenant.Namespace
	nowMs  int64
	copies *Searcher // answers from the copies in memory
	sql    *Searcher // answers in SQLite
	nextID int
}

func newColumnFixture(t *testing.T) *columnFixture {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	f := &columnFixture{t: t, db: db, nowMs: time.Now().UnixMilli()}
	f.ns[0] = defaultNamespace(t, db)
	ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 24*time.Hour)
	other, err := ts.UpsertNamespace(ctx, f.ns[0].OrgID, "other", tenant.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	f.ns[1] = other
	f.copies, f.sql = NewSearcher(db, DefaultColumnBudget), NewSearcher(db, DefaultColumnBudget)
	f.sql.SetColumnBudget(0)
	clock := func() time.Time { return time.UnixMilli(f.nowMs) }
	f.copies.SetClock(clock)
	f.sql.SetClock(clock)
	return f
}

// insert writes one email into namespace ns received at recv, to u<n mod
// 5>@x.test and, for every third, team<n mod 4>@y.test too.
func (f *columnFixture) insert(ns int, recv, exp int64, subject, from string) {
	f.t.Helper()
	ctx := context.Background()
	f.nextID++
	err := f.db.InTx(ctx, func(tx *store.Tx) error {
		doc := fmt.Sprintf(`{"id":"e%d","from":{"address":%q},"to":[],"subject":%q,"received_date":"","received_timestamp":0,"expires_timestamp":0}`,
			f.nextID, from, subject)
		var seq int64
		if err := tx.QueryRow(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
			VALUES (?, ?, ?, ?, ?, ?, 1, '127.0.0.1', 'test', ?, ?) RETURNING seq`,
			fmt.Sprintf("e%d", f.nextID), f.ns[ns].ID, recv, exp, from, subject, from, doc).Scan(&seq); err != nil {
			return err
		}
		rcpts := []string{fmt.Sprintf("u%d@x.test", f.nextID%5)}
		if f.nextID%3 == 0 {
			rcpts = append(rcpts, fmt.Sprintf("team%d@y.test", f.nextID%4))
		}
		for _, r := range rcpts {
			if _, err := tx.Exec(ctx, "INSERT INTO email_recipients (namespace_id, addr, email_seq) VALUES (?, ?, ?)", f.ns[ns].ID, r, seq); err != nil {
				return err
			}
		}
		return addCounts(ctx, tx, 0, map[string]int64{f.ns[ns].ID: 1})
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// deleteWhere deletes the emails a query's seq and id columns name.
func (f *columnFixture) deleteWhere(q string, args ...any) {
	f.t.Helper()
	ctx := context.Background()
	err := f.db.InTx(ctx, func(tx *store.Tx) error {
		seqs, ids, err := selectEmails(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		return deleteEmails(ctx, tx, seqs, ids)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// compare runs q on both searchers and fails unless they agree.
func (f *columnFixture) compare(q Query) Result {
	f.t.Helper()
	ctx := context.Background()
	a, err := f.copies.Search(ctx, q)
	if err != nil {
		f.t.Fatalf("%+v from memory: %v", q, err)
	}
	b, err := f.sql.Search(ctx, q)
	if err != nil {
		f.t.Fatalf("%+v in SQLite: %v", q, err)
	}
	if a.Total != b.Total || fmt.Sprint(ids(a)) != fmt.Sprint(ids(b)) {
		f.t.Fatalf("%+v: from memory %d %v, in SQLite %d %v", q, a.Total, ids(a), b.Total, ids(b))
	}
	return a
}

// loaded reports whether namespace ns has a copy in memory.
func (f *columnFixture) loaded(ns int) bool { return f.copies.copies.Loaded(f.ns[ns].ID) }

// Substring searches answered from the copies in memory find what SQLite
// finds, whatever happens to the namespace between them: new emails (some
// received before ones already copied, some in the other namespace), the
// quota's deletions, the reaper's, deletions of any other email, time passing
// past expiries, and every filter the copies serve, to_addr_prefix with a
// substring among them (through the recipients' range, or the matches looked
// up one by one, whichever is fewer).
func TestCopiesAgreeWithSQLite(t *testing.T) {
	f := newColumnFixture(t)
	rng := rand.New(rand.NewSource(1))
	words := []string{"Password reset", "Welcome", "Ünïcode ÉTÉ", "invoice", "İstanbul", "reset"}
	needles := []string{"reset", "password r", "é", "ÉTÉ", "i̇stan", "welcome", "e", "zzz", " "}
	froms := []string{"a@example.com", "bob@x.test", "carol@example.org"}
	base := f.nowMs
	recv := base
	for step := 0; step < 400; step++ {
		switch op := rng.Intn(20); {
		case op < 10: // new emails, sometimes received before the newest
			for k := rng.Intn(4); k >= 0; k-- {
				recv += int64(rng.Intn(2000))
				r := recv
				if rng.Intn(5) == 0 {
					r -= int64(rng.Intn(5000))
				}
				ttl := int64(60_000 + rng.Intn(600_000))
				f.insert(rng.Intn(3)/2, r, f.nowMs+ttl, fmt.Sprintf("%s %d", words[rng.Intn(len(words))], step), froms[rng.Intn(len(froms))])
			}
		case op == 10: // the quota keeps the newest n
			ctx := context.Background()
			if err := f.db.InTx(ctx, func(tx *store.Tx) error {
				return enforceQuota(ctx, tx, f.ns[0].ID, int64(5+rng.Intn(40)), f.nowMs)
			}); err != nil {
				t.Fatal(err)
			}
		case op == 11:
			if _, err := Reap(context.Background(), f.db, time.UnixMilli(f.nowMs)); err != nil {
				t.Fatal(err)
			}
		case op == 12: // any other deletion: one email from the middle
			f.deleteWhere("SELECT seq, id FROM emails WHERE namespace_id = ? ORDER BY random() LIMIT 1", f.ns[0].ID)
		case op < 15:
			f.nowMs += int64(rng.Intn(120_000))
		}
		q := Query{NamespaceID: f.ns[0].ID, Limit: 1 + rng.Intn(MaxLimit), Offset: rng.Intn(3) * rng.Intn(10)}
		if rng.Intn(3) > 0 {
			q.SubjectIncludes = needles[rng.Intn(len(needles))]
		}
		if q.SubjectIncludes == "" || rng.Intn(4) == 0 {
			q.FromAddrIncludes = []string{"example", "BOB@", "@"}[rng.Intn(3)]
		}
		if rng.Intn(4) == 0 {
			from := base + int64(rng.Intn(int(recv-base+1)))
			q.FromTimestamp = &from
		}
		if rng.Intn(4) == 0 {
			to := base + int64(rng.Intn(int(recv-base+1)))
			q.ToTimestamp = &to
		}
		if rng.Intn(3) == 0 {
			q.ToAddrPrefix = []string{"u", "U1@", "team", "TEAM3@", "u4@x.test", "zz", "\xff"}[rng.Intn(7)]
		}
		f.compare(q)
	}
	if !f.loaded(0) {
		t.Fatal("no copy of the namespace in memory: the searches ran in SQLite")
	}
}

package index

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// liveCount is inbox's count of a namespace's unexpired emails, which the
// copies are checked against: namespace_counts less the expired emails not
// reaped yet.
const liveCount = `(SELECT COALESCE(SUM(emails), 0) FROM namespace_counts WHERE namespace_id = ?)
	- (SELECT COUNT(*) FROM emails WHERE expires_ms <= ? AND +namespace_id = ?)`

// fixture is a SQLite store with two namespaces whose emails are written and
// deleted row by row, with chosen times, as inbox's writers do: each change
// of the emails table is counted in namespace_counts in its transaction.
type fixture struct {
	t     testing.TB
	db    *store.DB
	ns    [2]string
	nowMs int64
	cache *Cache
	next  int
}

func newFixture(t testing.TB) *fixture {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 24*time.Hour)
	org, err := ts.CreateOrg(ctx, "acme", tenant.DefaultTOTPDeviceLimit, true)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, nowMs: time.Now().UnixMilli(), cache: New(DefaultBudget, liveCount)}
	for i, name := range []string{"alpha", "beta"} {
		ns, err := ts.CreateNamespace(ctx, org.ID, name, tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		f.ns[i] = ns.ID
	}
	return f
}

// write runs fn in a write transaction, failing the test if it fails.
func (f *fixture) write(fn func(ctx context.Context, tx *store.Tx) error) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.db.InTx(ctx, func(tx *store.Tx) error { return fn(ctx, tx) }); err != nil {
		f.t.Fatal(err)
	}
}

// add writes one email into namespace ns in tx, and counts it.
func (f *fixture) add(ctx context.Context, tx *store.Tx, ns int, recv, exp int64, subject, from string) error {
	f.next++
	id := fmt.Sprintf("e%d", f.next)
	doc := fmt.Sprintf(`{"id":%q,"from":{"address":%q},"to":[],"subject":%q,"received_date":"","received_timestamp":0,"expires_timestamp":0}`, id, from, subject)
	if _, err := tx.Exec(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
		VALUES (?, ?, ?, ?, ?, ?, 1, '127.0.0.1', 'test', ?, ?)`, id, f.ns[ns], recv, exp, from, subject, from, doc); err != nil {
		return err
	}
	return count(ctx, tx, f.ns[ns], 0, 1)
}

// insert writes one email into namespace ns, in a transaction of its own.
func (f *fixture) insert(ns int, recv, exp int64, subject, from string) {
	f.t.Helper()
	f.write(func(ctx context.Context, tx *store.Tx) error { return f.add(ctx, tx, ns, recv, exp, subject, from) })
}

// count adds n to the namespace's count in shard (inbox's writers add to
// shard 0 and take deletions off shard -1).
func count(ctx context.Context, tx *store.Tx, nsID string, shard, n int) error {
	_, err := tx.Exec(ctx, `INSERT INTO namespace_counts (namespace_id, shard, emails) VALUES (?, ?, ?)
		ON CONFLICT (namespace_id, shard) DO UPDATE SET emails = namespace_counts.emails + excluded.emails`, nsID, shard, n)
	return err
}

// remove deletes in tx the emails of namespace ns that cond (a condition on
// emails) selects, and takes them off its count.
func (f *fixture) remove(ctx context.Context, tx *store.Tx, ns int, cond string, args ...any) error {
	args = append([]any{f.ns[ns]}, args...)
	res, err := tx.Exec(ctx, "DELETE FROM emails WHERE namespace_id = ? AND ("+cond+")", args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	return count(ctx, tx, f.ns[ns], -1, -int(n))
}

// quota deletes in tx what inbox's quota deletes: every email of namespace ns
// older than its newest keep unexpired ones, expired ones included.
func (f *fixture) quota(ctx context.Context, tx *store.Tx, ns int, keep int) error {
	var recv, seq int64
	err := tx.QueryRow(ctx, `SELECT received_ms, seq FROM emails WHERE namespace_id = ? AND expires_ms > ?
		ORDER BY received_ms DESC, seq DESC LIMIT 1 OFFSET ?`, f.ns[ns], f.nowMs, keep).Scan(&recv, &seq)
	if err != nil {
		return nil // within the quota
	}
	return f.remove(ctx, tx, ns, "received_ms < ? OR (received_ms = ? AND seq <= ?)", recv, recv, seq)
}

// reap deletes what the reaper deletes: the expired emails.
func (f *fixture) reap() {
	f.t.Helper()
	f.write(func(ctx context.Context, tx *store.Tx) error {
		for ns := range f.ns {
			if err := f.remove(ctx, tx, ns, "expires_ms <= ?", f.nowMs); err != nil {
				return err
			}
		}
		return nil
	})
}

// search answers q on namespace ns from the cache at nowMs; ok is false when
// the cache did not serve it.
func (f *fixture) search(ns int, q Query, nowMs int64) (total int, page []int64, ok bool) {
	f.t.Helper()
	total, page, ok, err := fromCache(f.db, f.cache, f.ns[ns], nowMs, q)
	if err != nil {
		f.t.Fatalf("%+v from memory: %v", q, err)
	}
	return total, page, ok
}

// fromCache answers q on the namespace from the cache's copy at nowMs, in a
// read transaction of its own; ok is false when the cache did not serve it.
func fromCache(db *store.DB, cache *Cache, nsID string, nowMs int64, q Query) (total int, page []int64, ok bool, err error) {
	ctx := context.Background()
	err = db.InReadTx(ctx, func(tx *store.Tx) error {
		c, have, err := cache.View(ctx, tx, nsID, nowMs)
		if err != nil || !have {
			return err
		}
		total, page = c.Search(q, nowMs)
		ok = true
		return nil
	})
	return total, page, ok, err
}

// want answers q on namespace ns in SQLite, row by row.
func (f *fixture) want(ns int, q Query) (total int, page []int64) {
	f.t.Helper()
	total, page, err := rowByRow(f.db, f.ns[ns], f.nowMs, q)
	if err != nil {
		f.t.Fatal(err)
	}
	return total, page
}

// rowByRow answers q on the namespace in SQLite, checking each row with the
// fold SQL function, which folds as the copies fold (store.Fold).
func rowByRow(db *store.DB, nsID string, nowMs int64, q Query) (total int, page []int64, err error) {
	cond, args := "namespace_id = ? AND expires_ms > ?", []any{nsID, nowMs}
	if q.Subject != "" {
		cond, args = cond+" AND instr(fold(subject), ?) > 0", append(args, store.Fold(q.Subject))
	}
	if q.From != "" {
		cond, args = cond+" AND instr(fold(from_addr), ?) > 0", append(args, store.Fold(q.From))
	}
	if q.FromMs != nil {
		cond, args = cond+" AND received_ms >= ?", append(args, *q.FromMs)
	}
	if q.ToMs != nil {
		cond, args = cond+" AND received_ms <= ?", append(args, *q.ToMs)
	}
	rows, err := db.Query(context.Background(), "SELECT seq FROM emails WHERE "+cond+" ORDER BY received_ms DESC, seq DESC", args...)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var all []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return 0, nil, err
		}
		all = append(all, seq)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	page = []int64{}
	if q.Offset < len(all) {
		page = all[q.Offset:min(len(all), q.Offset+q.Limit)]
	}
	return len(all), page, nil
}

// compare fails unless the cache, when it serves q, answers as SQLite does,
// and returns SQLite's count.
func (f *fixture) compare(ns int, q Query) int {
	f.t.Helper()
	wantTotal, wantPage := f.want(ns, q)
	if total, page, ok := f.search(ns, q, f.nowMs); ok && (total != wantTotal || !slices.Equal(page, wantPage)) {
		f.t.Fatalf("%+v: from memory %d %v, in SQLite %d %v", q, total, page, wantTotal, wantPage)
	}
	return wantTotal
}

// loaded reports whether namespace ns has a copy in memory.
func (f *fixture) loaded(ns int) bool { return f.cache.Loaded(f.ns[ns]) }

// Searches answered from the copies find what SQLite finds, whatever happens
// to the namespace between them: new emails (some received before ones
// already copied, some in the other namespace), the quota's deletions, the
// reaper's, deletions of any other email, time passing past expiries, and
// every filter the copies serve.
func TestAgreesWithSQLite(t *testing.T) {
	f := newFixture(t)
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
			f.write(func(ctx context.Context, tx *store.Tx) error { return f.quota(ctx, tx, 0, 5+rng.Intn(40)) })
		case op == 11:
			f.reap()
		case op == 12: // any other deletion: one email from the middle
			f.write(func(ctx context.Context, tx *store.Tx) error {
				return f.remove(ctx, tx, 0, "seq = (SELECT seq FROM emails WHERE namespace_id = ? ORDER BY random() LIMIT 1)", f.ns[0])
			})
		case op < 15:
			f.nowMs += int64(rng.Intn(120_000))
		}
		q := Query{Limit: 1 + rng.Intn(20), Offset: rng.Intn(3) * rng.Intn(10)}
		if rng.Intn(3) > 0 {
			q.Subject = needles[rng.Intn(len(needles))]
		}
		if q.Subject == "" || rng.Intn(4) == 0 {
			q.From = []string{"example", "BOB@", "@"}[rng.Intn(3)]
		}
		if rng.Intn(4) == 0 {
			from := base + int64(rng.Intn(int(recv-base+1)))
			q.FromMs = &from
		}
		if rng.Intn(4) == 0 {
			to := base + int64(rng.Intn(int(recv-base+1)))
			q.ToMs = &to
		}
		f.compare(0, q)
	}
	if !f.loaded(0) {
		t.Fatal("no copy of the namespace in memory: the searches ran in SQLite only")
	}
}

// Matches finds what Search counts, oldest first, ignoring the page.
func TestMatches(t *testing.T) {
	f := newFixture(t)
	for i := range 30 {
		f.insert(i%2, f.nowMs+int64(i), f.nowMs+3_600_000, fmt.Sprintf("Order %d", i), "a@example.com")
	}
	q := Query{Subject: "order 1", Limit: 2, Offset: 1}
	ctx := context.Background()
	err := f.db.InReadTx(ctx, func(tx *store.Tx) error {
		c, ok, err := f.cache.View(ctx, tx, f.ns[0], f.nowMs)
		if err != nil || !ok {
			return fmt.Errorf("view: %v %v", ok, err)
		}
		total, _ := c.Search(q, f.nowMs)
		all := c.Matches(q, f.nowMs)
		wantTotal, wantPage := f.want(0, Query{Subject: q.Subject, Limit: 100})
		slices.Reverse(wantPage)
		if total != wantTotal || !slices.Equal(all, wantPage) {
			return fmt.Errorf("Search counts %d, Matches %v; SQLite %d %v", total, all, wantTotal, wantPage)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A namespace too large for the budget is not copied; copies are dropped
// least recently searched first.
func TestBudget(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 50; i++ {
		f.insert(0, f.nowMs+int64(i), f.nowMs+3_600_000, fmt.Sprintf("first %d", i), "a@example.com")
		f.insert(1, f.nowMs+int64(i), f.nowMs+3_600_000, fmt.Sprintf("second %d", i), "b@example.com")
	}
	search := func(ns int) {
		t.Helper()
		if total := f.compare(ns, Query{Limit: 10, Subject: " 4"}); total != 11 {
			t.Fatalf("namespace %d: %d matches, want 11", ns, total)
		}
	}
	search(0)
	size := f.cache.ns[f.ns[0]].bytes
	f.cache = New(size+size/2, liveCount) // room for one namespace, not two
	search(0)
	if !f.loaded(0) {
		t.Fatal("namespace 0 not copied")
	}
	search(1)
	if f.loaded(0) || !f.loaded(1) {
		t.Fatalf("after searching namespace 1: copies of 0 %v, of 1 %v; want only 1", f.loaded(0), f.loaded(1))
	}
	f.cache = New(10*estRowBytes, liveCount) // smaller than either
	search(0)
	if f.loaded(0) {
		t.Fatal("a namespace over the budget was copied")
	}
}

// A namespace whose rows hold more text than estRowBytes allows for is judged
// by what its copy took: once over the budget it is not loaded again at that
// size, and it is loaded again once a fresh load of it would fit.
func TestBudgetByBytes(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("long subject ", 30) // 390 bytes a row
	for i := 0; i < 300; i++ {
		f.nowMs++
		f.insert(0, f.nowMs, f.nowMs+3_600_000, fmt.Sprintf("%s%d", long, i), "a@example.com")
	}
	f.cache = New(64<<10, liveCount) // 300 rows at estRowBytes fit; at 390 bytes, 150 do
	q := Query{Limit: 5, Subject: "subject 2"}
	step := func(what string, wantLoads int, wantLoaded bool) {
		t.Helper()
		f.compare(0, q)
		if got := f.cache.Loads(); got != wantLoads || f.loaded(0) != wantLoaded {
			t.Fatalf("after %s: loaded %d times, copy kept %v; want %d, %v", what, got, f.loaded(0), wantLoads, wantLoaded)
		}
	}
	step("the first search", 1, false)
	step("the second search", 1, false)
	f.write(func(ctx context.Context, tx *store.Tx) error { return f.quota(ctx, tx, 0, 100) })
	step("the quota", 2, true)
}

// A copy follows new emails, the quota's deletions (compacting the copy once
// they outweigh what is left) and the reaper's without loading the namespace
// again; any other deletion makes it load again.
func TestCatchUpWithoutLoading(t *testing.T) {
	f := newFixture(t)
	q := Query{Limit: 5, Subject: "reset"}
	add := func(n int, ttl int64) {
		for i := 0; i < n; i++ {
			f.nowMs++
			f.insert(i%2, f.nowMs, f.nowMs+ttl, fmt.Sprintf("Password reset %d", i), "a@example.com")
		}
	}
	step := func(what string, wantTotal, wantLoads int) {
		t.Helper()
		if total := f.compare(0, q); total != wantTotal {
			t.Fatalf("after %s: %d matches, want %d", what, total, wantTotal)
		}
		if !f.loaded(0) {
			t.Fatalf("after %s: no copy in memory", what)
		}
		if got := f.cache.Loads(); got != wantLoads {
			t.Fatalf("after %s: namespace loaded %d times, want %d", what, got, wantLoads)
		}
	}
	add(20, 1000)
	step("the first search", 10, 1)
	add(20, 3_600_000)
	step("new emails", 20, 1)
	f.write(func(ctx context.Context, tx *store.Tx) error { return f.quota(ctx, tx, 0, 15) })
	step("the quota", 15, 1)
	add(4, 1000)
	f.nowMs += 2000
	step("expiry", 10, 1) // the quota kept 5 short-lived ones
	f.reap()
	step("the reaper", 10, 1)
	copied := func() Copy { return f.cache.ns[f.ns[0]].cols }
	if c := copied(); c.dead == 0 || c.subj.deadText() == 0 {
		t.Fatalf("after the reaper: %d rows and %d bytes of subjects dropped, want some of each left in the arrays", c.dead, c.subj.deadText())
	}
	f.write(func(ctx context.Context, tx *store.Tx) error { return f.quota(ctx, tx, 0, 4) })
	step("a quota that drops most of the rows", 4, 1)
	if c := copied(); c.dead != 0 || c.subj.deadText() != 0 || c.from.deadText() != 0 || len(c.subj.text) != c.subj.liveText() {
		t.Fatalf("after the quota dropped most rows: %d rows and %d bytes of subjects dropped still held, want the copy compacted", c.dead, c.subj.deadText())
	}
	add(520, 3_600_000) // past two blocks of the trigram index, counted on from before
	step("new emails after compacting", 264, 1)
	f.write(func(ctx context.Context, tx *store.Tx) error {
		return f.remove(ctx, tx, 0, "seq = (SELECT seq FROM emails WHERE namespace_id = ? ORDER BY seq DESC LIMIT 1 OFFSET 3)", f.ns[0])
	})
	step("another deletion", 263, 2)
}

// Copy.search finds what a row-by-row check finds, on short rows over a
// two-letter alphabet: matches that would run from one row into the next,
// empty rows, expired rows, both needles, and every offset and limit.
func TestSearchRowByRow(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	word := randomWords(rng, "ab")
	for round := 0; round < 2000; round++ {
		c := emptyCopy(0)
		n := rng.Intn(12)
		var rows []emailRow
		for i := 0; i < n; i++ {
			r := emailRow{seq: int64(i + 1), recv: int64(i / 2), exp: int64(rng.Intn(3)), subj: word(rng.Intn(5)), from: word(rng.Intn(4))}
			rows = append(rows, r)
		}
		if err := c.add(rows); err != nil {
			t.Fatal(err)
		}
		subj, from := []byte(word(1+rng.Intn(3))), []byte(nil)
		if rng.Intn(3) == 0 {
			from = []byte(word(1 + rng.Intn(2)))
		}
		if rng.Intn(4) == 0 {
			subj = nil
			if from == nil {
				from = []byte("a")
			}
		}
		checkSearch(t, &c, rows, Query{Limit: 1 + rng.Intn(4), Offset: rng.Intn(6)}, subj, from)
	}
}

// Searches of one namespace running while emails arrive share its copy: each
// sees a whole snapshot (its page as long as its count allows), no searcher's
// count goes back, and the race detector sees no unguarded access to the
// arrays that updates append to.
func TestConcurrentSearches(t *testing.T) {
	f := newFixture(t)
	const emails = 600 // 300 in the namespace searched: a full block of the trigram index, and more
	q := Query{Limit: 7, Subject: "reset"}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			last := 0
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				var total, n int
				ctx := context.Background()
				err := f.db.InReadTx(ctx, func(tx *store.Tx) error {
					now := time.Now().UnixMilli()
					c, ok, err := f.cache.View(ctx, tx, f.ns[0], now)
					if err != nil || !ok {
						return fmt.Errorf("view: %v %v", ok, err)
					}
					var page []int64
					total, page = c.Search(q, now)
					n = len(page)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				if total < last || n != min(7, total) {
					errs <- fmt.Errorf("count %d after %d, page of %d", total, last, n)
					return
				}
				last = total
			}
		}()
	}
	now := time.Now().UnixMilli()
	for i := 0; i < emails; i++ {
		f.insert(i%2, now+int64(i), now+3_600_000, fmt.Sprintf("reset %d", i), "a@example.com")
	}
	close(done)
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if total := f.compare(0, q); total != emails/2 || !f.loaded(0) {
		t.Fatalf("%d matches at the end, copy in memory %v; want %d and a copy", total, f.loaded(0), emails/2)
	}
}

// The trigram index skips only blocks that cannot hold a match: over thousands
// of rows (full blocks and a part-filled last one), after a prefix of them is
// dropped, the search finds what a row-by-row check finds.
func TestBlockIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	word := randomWords(rng, "abcdefghij")
	for round := 0; round < 6; round++ {
		c := emptyCopy(0)
		n := 1000 + rng.Intn(3000)
		rows := make([]emailRow, n)
		for i := range rows {
			rows[i] = emailRow{seq: int64(i + 1), recv: int64(i), exp: int64(rng.Intn(4)), subj: word(rng.Intn(7)), from: word(rng.Intn(5))}
		}
		if err := c.add(rows); err != nil {
			t.Fatal(err)
		}
		if round%2 == 1 {
			k := rng.Intn(n)
			c = c.dropBefore(rows[k].recv, rows[k].seq)
			rows = rows[k:]
		}
		for qn := 0; qn < 300; qn++ {
			subj, from := []byte(word(1+rng.Intn(4))), []byte(nil)
			if rng.Intn(3) == 0 {
				from = []byte(word(1 + rng.Intn(3)))
			}
			checkSearch(t, &c, rows, Query{Limit: 1 + rng.Intn(20), Offset: rng.Intn(3) * rng.Intn(30)}, subj, from)
		}
	}
}

// randomWords returns a maker of random words of n letters from alphabet.
func randomWords(rng *rand.Rand, alphabet string) func(n int) string {
	return func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
}

// checkSearch fails unless c.search answers q (at time 0) as a check of each
// of rows (c's rows, oldest first) does.
func checkSearch(t *testing.T, c *Copy, rows []emailRow, q Query, subj, from []byte) {
	t.Helper()
	var want []int64
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		if r.exp > 0 && (subj == nil || strings.Contains(r.subj, string(subj))) && (from == nil || strings.Contains(r.from, string(from))) {
			want = append(want, r.seq)
		}
	}
	total, page := c.search(q, 0, subj, from)
	wantPage := []int64{}
	if q.Offset < len(want) {
		wantPage = want[q.Offset:min(len(want), q.Offset+q.Limit)]
	}
	if total != len(want) || fmt.Sprint(page) != fmt.Sprint(wantPage) {
		t.Fatalf("%d rows, subject %q, from %q, %+v: got %d %v, want %d %v", len(rows), subj, from, q, total, page, len(want), wantPage)
	}
}

// A namespace held at its quota (2,000 emails, 500 arriving between searches)
// keeps one copy, caught up at each search, whose memory stays within a small
// factor of a fresh load's however many rounds pass: the quota's deletions are
// given back, not only skipped. Under a 1 MiB budget that both namespaces' fresh
// copies fit in, the namespace is always searched from memory, and the other
// namespace's copy is never evicted for it.
func TestAtQuotaStayBounded(t *testing.T) {
	const (
		quota   = 2000
		arrive  = 500
		rounds  = 24
		budget  = 1 << 20
		maxGrow = 3 // the copy's bytes, against a fresh load's
	)
	f := newFixture(t)
	f.cache = New(budget, liveCount)
	ctx := context.Background()
	ttl := int64(24 * 3_600_000)
	arrivals := func(n int) {
		t.Helper()
		f.write(func(ctx context.Context, tx *store.Tx) error {
			for i := 0; i < n; i++ {
				f.nowMs++
				id := f.next + 1
				subject := fmt.Sprintf("Order %07d password reset for user%d@example.com", id, id%500)
				from := fmt.Sprintf("sender%d@example%d.com", id%97, id%13)
				if err := f.add(ctx, tx, 0, f.nowMs, f.nowMs+ttl, subject, from); err != nil {
					return err
				}
			}
			return f.quota(ctx, tx, 0, quota)
		})
	}
	for i := 0; i < 100; i++ {
		f.insert(1, f.nowMs, f.nowMs+ttl, fmt.Sprintf("Welcome %d", i), "b@example.com")
	}
	arrivals(quota)
	q := Query{Limit: 10, Subject: "password reset for user7@"}
	other := Query{Limit: 10, Subject: "welcome"}
	var largest, freshest int64
	for round := 0; round < rounds; round++ {
		if round > 0 {
			arrivals(arrive)
		}
		f.compare(0, q)
		f.compare(1, other)
		if !f.loaded(0) || !f.loaded(1) {
			t.Fatalf("round %d: namespace at its quota in memory %v, other namespace %v; want both", round, f.loaded(0), f.loaded(1))
		}
		var fresh Copy
		err := f.db.InReadTx(ctx, func(tx *store.Tx) error {
			var err error
			fresh, err = load(ctx, tx, f.ns[0], 0, quota, f.nowMs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e := f.cache.ns[f.ns[0]]
		if e.cols.len() != quota {
			t.Fatalf("round %d: copy of %d rows, want %d", round, e.cols.len(), quota)
		}
		if got, want := e.cols.bytes(), fresh.bytes(); got > maxGrow*want {
			t.Fatalf("round %d: copy of %d bytes, a fresh load %d: over %d times", round, got, want, maxGrow)
		} else if got > largest {
			largest, freshest = got, want
		}
		if n := f.cache.Loads(); n != 2 {
			t.Fatalf("round %d: namespaces loaded %d times, want once each (caught up, never evicted)", round, n)
		}
	}
	t.Logf("largest copy %d bytes, where a fresh load took %d", largest, freshest)
}

// FuzzSearch runs any substring (the API passes any string of up to 998
// characters) as a subject and as a From address through a copy and row by
// row in SQLite, over the same emails: both must find the same emails. The
// copy is searched twice: as catching up left it, its arrays still holding
// the row the quota dropped, and compacted into new arrays (its trigram
// blocks still counted from the dropped row).
func FuzzSearch(f *testing.F) {
	fx := newFixture(f)
	exp := fx.nowMs + 3_600_000
	fx.insert(0, fx.nowMs, exp, "dropped by the quota", "dropped@example.com")
	if _, _, ok := fx.search(0, Query{Subject: "x", Limit: 1}, fx.nowMs); !ok {
		f.Fatal("the namespace was not copied")
	}
	subjects := []string{
		"Order 0042317 password reset", "ÉTÉ café \"quoted\" AND OR NOT",
		"Straße ΣΊΣΥΦΟΣ İstanbul KELVIN \u212a-sign", "a*b^c (d) {e} [f] col: x", "tabs\tand  spaces",
	}
	for i, s := range subjects {
		fx.insert(0, fx.nowMs+int64(i)+1, exp, s, fmt.Sprintf("S%d.sender@Example.com", i))
	}
	fx.write(func(ctx context.Context, tx *store.Tx) error { return fx.quota(ctx, tx, 0, len(subjects)) })
	if _, _, ok := fx.search(0, Query{Subject: "x", Limit: 1}, fx.nowMs); !ok {
		f.Fatal("the namespace's copy was not caught up")
	}
	c := fx.cache.ns[fx.ns[0]].cols
	if c.dead != 1 {
		f.Fatalf("the copy holds %d dropped rows, want 1", c.dead)
	}
	compacted := New(DefaultBudget, liveCount)
	compacted.publish(fx.ns[0], compacted.entry(fx.ns[0]), c.compacted())
	for _, s := range []string{"order 0042317", "password reset", "ÉTÉ", "\"quoted\"", "AND OR", "ß", "σίσυφος", "i̇stanbul", "kelvin", "k-sign", "a*b", "(d) {e}", "col: x", "\t", "  ", "sender@example", "\x00", "\xff\xfe", `""`, "NEAR(a b)", "dropped"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, needle string) {
		if needle == "" || utf8.RuneCountInString(needle) > 998 {
			return
		}
		for _, q := range []Query{{Subject: needle, Limit: 20}, {From: needle, Limit: 20}} {
			wantTotal, wantPage, err := rowByRow(fx.db, fx.ns[0], fx.nowMs, q)
			if err != nil {
				t.Fatalf("%+q row by row: %v", needle, err)
			}
			for name, cache := range map[string]*Cache{"from the copy": fx.cache, "from the compacted copy": compacted} {
				total, page, ok, err := fromCache(fx.db, cache, fx.ns[0], fx.nowMs, q)
				if err != nil || !ok {
					t.Fatalf("%+v %s: %v, served %v", q, name, err, ok)
				}
				if total != wantTotal || !slices.Equal(page, wantPage) {
					t.Fatalf("%+v: %d %v %s, %d %v row by row", q, total, page, name, wantTotal, wantPage)
				}
			}
		}
	})
}

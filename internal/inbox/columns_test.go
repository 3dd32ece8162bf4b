package inbox

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// columnFixture is a SQLite store with two namespaces whose emails are written
// row by row, with chosen times, as the ingester writes them.
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
func (f *columnFixture) loaded(ns int) bool {
	e, ok := f.copies.cols.ns[f.ns[ns].ID]
	return ok && e.loaded
}

// Substring searches answered from the copies in memory find what SQLite
// finds, whatever happens to the namespace between them: new emails (some
// received before ones already copied, some in the other namespace), the
// quota's deletions, the reaper's, deletions of any other email, time passing
// past expiries, and every filter the copies serve, to_addr_prefix with a
// substring among them (through the recipients' range, or the matches looked
// up one by one, whichever is fewer).
func TestColumnsAgreeWithSQLite(t *testing.T) {
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

// A namespace too large for the budget is searched in SQLite; copies are
// dropped least recently searched first.
func TestColumnBudget(t *testing.T) {
	f := newColumnFixture(t)
	for i := 0; i < 50; i++ {
		f.insert(0, f.nowMs+int64(i), f.nowMs+3_600_000, fmt.Sprintf("first %d", i), "a@example.com")
		f.insert(1, f.nowMs+int64(i), f.nowMs+3_600_000, fmt.Sprintf("second %d", i), "b@example.com")
	}
	search := func(ns int) {
		t.Helper()
		res := f.compare(Query{NamespaceID: f.ns[ns].ID, Limit: 10, SubjectIncludes: " 4"})
		if res.Total != 11 {
			t.Fatalf("namespace %d: %d matches, want 11", ns, res.Total)
		}
	}
	search(0)
	size := f.copies.cols.ns[f.ns[0].ID].bytes
	f.copies.SetColumnBudget(size + size/2) // room for one namespace, not two
	search(0)
	if !f.loaded(0) {
		t.Fatal("namespace 0 not copied")
	}
	search(1)
	if f.loaded(0) || !f.loaded(1) {
		t.Fatalf("after searching namespace 1: copies of 0 %v, of 1 %v; want only 1", f.loaded(0), f.loaded(1))
	}
	f.copies.SetColumnBudget(10 * estRowBytes) // smaller than either
	search(0)
	if f.loaded(0) {
		t.Fatal("a namespace over the budget was copied")
	}
}

// A namespace whose rows hold more text than estRowBytes allows for is judged
// by what its copy took: once over the budget it is not loaded again at that
// size, and it is loaded again once a fresh load of it would fit.
func TestColumnBudgetByBytes(t *testing.T) {
	f := newColumnFixture(t)
	long := strings.Repeat("long subject ", 30) // 390 bytes a row
	for i := 0; i < 300; i++ {
		f.nowMs++
		f.insert(0, f.nowMs, f.nowMs+3_600_000, fmt.Sprintf("%s%d", long, i), "a@example.com")
	}
	f.copies.SetColumnBudget(64 << 10) // 300 rows at estRowBytes fit; at 390 bytes, 150 do
	q := Query{NamespaceID: f.ns[0].ID, Limit: 5, SubjectIncludes: "subject 2"}
	step := func(what string, wantLoads int, wantLoaded bool) {
		t.Helper()
		f.compare(q)
		if got := f.copies.cols.loads; got != wantLoads || f.loaded(0) != wantLoaded {
			t.Fatalf("after %s: loaded %d times, copy kept %v; want %d, %v", what, got, f.loaded(0), wantLoads, wantLoaded)
		}
	}
	step("the first search", 1, false)
	step("the second search", 1, false)
	ctx := context.Background()
	if err := f.db.InTx(ctx, func(tx *store.Tx) error { return enforceQuota(ctx, tx, f.ns[0].ID, 100, f.nowMs) }); err != nil {
		t.Fatal(err)
	}
	step("the quota", 2, true)
}

// A copy follows new emails, the quota's deletions (compacting the copy once
// they outweigh what is left) and the reaper's without loading the namespace
// again; any other deletion makes it load again.
func TestColumnsCatchUpWithoutLoading(t *testing.T) {
	f := newColumnFixture(t)
	q := Query{NamespaceID: f.ns[0].ID, Limit: 5, SubjectIncludes: "reset"}
	add := func(n int, ttl int64) {
		for i := 0; i < n; i++ {
			f.nowMs++
			f.insert(i%2, f.nowMs, f.nowMs+ttl, fmt.Sprintf("Password reset %d", i), "a@example.com")
		}
	}
	step := func(what string, wantTotal, wantLoads int) {
		t.Helper()
		if res := f.compare(q); res.Total != wantTotal {
			t.Fatalf("after %s: %d matches, want %d", what, res.Total, wantTotal)
		}
		if got := f.copies.cols.loads; got != wantLoads {
			t.Fatalf("after %s: namespace loaded %d times, want %d", what, got, wantLoads)
		}
	}
	add(20, 1000)
	step("the first search", 10, 1)
	add(20, 3_600_000)
	step("new emails", 20, 1)
	ctx := context.Background()
	if err := f.db.InTx(ctx, func(tx *store.Tx) error { return enforceQuota(ctx, tx, f.ns[0].ID, 15, f.nowMs) }); err != nil {
		t.Fatal(err)
	}
	step("the quota", 15, 1)
	add(4, 1000)
	f.nowMs += 2000
	step("expiry", 10, 1) // the quota kept 5 short-lived ones
	if n, err := Reap(ctx, f.db, time.UnixMilli(f.nowMs)); err != nil || n == 0 {
		t.Fatalf("reaped %d, %v", n, err)
	}
	step("the reaper", 10, 1)
	copied := func() columns { return f.copies.cols.ns[f.ns[0].ID].cols }
	if c := copied(); c.dead == 0 || c.subj.deadText() == 0 {
		t.Fatalf("after the reaper: %d rows and %d bytes of subjects dropped, want some of each left in the arrays", c.dead, c.subj.deadText())
	}
	if err := f.db.InTx(ctx, func(tx *store.Tx) error { return enforceQuota(ctx, tx, f.ns[0].ID, 4, f.nowMs) }); err != nil {
		t.Fatal(err)
	}
	step("a quota that drops most of the rows", 4, 1)
	if c := copied(); c.dead != 0 || c.subj.deadText() != 0 || c.from.deadText() != 0 || len(c.subj.text) != c.subj.liveText() {
		t.Fatalf("after the quota dropped most rows: %d rows and %d bytes of subjects dropped still held, want the copy compacted", c.dead, c.subj.deadText())
	}
	add(520, 3_600_000) // past two blocks of the trigram index, counted on from before
	step("new emails after compacting", 264, 1)
	f.deleteWhere("SELECT seq, id FROM emails WHERE namespace_id = ? ORDER BY seq DESC LIMIT 1 OFFSET 3", f.ns[0].ID)
	step("another deletion", 263, 2)
}

// columns.search finds what a row-by-row check finds, on short rows over a
// two-letter alphabet: matches that would run from one row into the next,
// empty rows, expired rows, both needles, and every offset and limit.
func TestColumnsSearchRowByRow(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	word := randomWords(rng, "ab")
	for round := 0; round < 2000; round++ {
		c := emptyColumns(0)
		n := rng.Intn(12)
		var rows []columnRow
		for i := 0; i < n; i++ {
			r := columnRow{seq: int64(i + 1), recv: int64(i / 2), exp: int64(rng.Intn(3)), subj: word(rng.Intn(5)), from: word(rng.Intn(4))}
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
// sees a whole snapshot (its page as long as its count allows, every row a
// match, newest first), no searcher's count goes back, and the race detector
// sees no unguarded access to the arrays that updates append to.
func TestColumnsConcurrentSearches(t *testing.T) {
	f := newColumnFixture(t)
	f.copies.SetClock(time.Now)
	const emails = 600 // 300 in the namespace searched: a full block of the trigram index, and more
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
				res, err := f.copies.Search(context.Background(), Query{NamespaceID: f.ns[0].ID, Limit: 7, SubjectIncludes: "reset"})
				if err != nil {
					errs <- err
					return
				}
				if res.Total < last || len(res.Emails) != min(7, res.Total) {
					errs <- fmt.Errorf("count %d after %d, page of %d", res.Total, last, len(res.Emails))
					return
				}
				for _, e := range res.Emails {
					if !strings.Contains(e.Subject, "reset") {
						errs <- fmt.Errorf("page holds %q", e.Subject)
						return
					}
				}
				last = res.Total
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
	if res := f.compare(Query{NamespaceID: f.ns[0].ID, Limit: 7, SubjectIncludes: "reset"}); res.Total != emails/2 {
		t.Fatalf("%d matches at the end, want %d", res.Total, emails/2)
	}
}

// The trigram index skips only blocks that cannot hold a match: over thousands
// of rows (full blocks and a part-filled last one), after a prefix of them is
// dropped, the search finds what a row-by-row check finds.
func TestColumnsBlockIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	word := randomWords(rng, "abcdefghij")
	for round := 0; round < 6; round++ {
		c := emptyColumns(0)
		n := 1000 + rng.Intn(3000)
		rows := make([]columnRow, n)
		for i := range rows {
			rows[i] = columnRow{seq: int64(i + 1), recv: int64(i), exp: int64(rng.Intn(4)), subj: word(rng.Intn(7)), from: word(rng.Intn(5))}
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
			checkSearch(t, &c, rows, Query{Limit: 1 + rng.Intn(MaxLimit), Offset: rng.Intn(3) * rng.Intn(30)}, subj, from)
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
func checkSearch(t *testing.T, c *columns, rows []columnRow, q Query, subj, from []byte) {
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
func TestColumnsAtQuotaStayBounded(t *testing.T) {
	const (
		quota   = 2000
		arrive  = 500
		rounds  = 24
		budget  = 1 << 20
		maxGrow = 3 // the copy's bytes, against a fresh load's
	)
	f := newColumnFixture(t)
	f.copies.SetColumnBudget(budget)
	ctx := context.Background()
	ttl := int64(24 * 3_600_000)
	arrivals := func(n int) {
		t.Helper()
		err := f.db.InTx(ctx, func(tx *store.Tx) error {
			for i := 0; i < n; i++ {
				f.nextID++
				f.nowMs++
				subject := fmt.Sprintf("Order %07d password reset for user%d@example.com", f.nextID, f.nextID%500)
				from := fmt.Sprintf("sender%d@example%d.com", f.nextID%97, f.nextID%13)
				doc := fmt.Sprintf(`{"id":"e%d","from":{"address":%q},"to":[],"subject":%q,"received_date":"","received_timestamp":0,"expires_timestamp":0}`,
					f.nextID, from, subject)
				if _, err := tx.Exec(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
					VALUES (?, ?, ?, ?, ?, ?, 1, '127.0.0.1', 'test', ?, ?)`,
					fmt.Sprintf("e%d", f.nextID), f.ns[0].ID, f.nowMs, f.nowMs+ttl, from, subject, from, doc); err != nil {
					return err
				}
			}
			if err := addCounts(ctx, tx, 0, map[string]int64{f.ns[0].ID: int64(n)}); err != nil {
				return err
			}
			return enforceQuota(ctx, tx, f.ns[0].ID, quota, f.nowMs)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		f.insert(1, f.nowMs, f.nowMs+ttl, fmt.Sprintf("Welcome %d", i), "b@example.com")
	}
	arrivals(quota)
	q := Query{NamespaceID: f.ns[0].ID, Limit: 10, SubjectIncludes: "password reset for user7@"}
	var largest, freshest int64
	other := Query{NamespaceID: f.ns[1].ID, Limit: 10, SubjectIncludes: "welcome"}
	for round := 0; round < rounds; round++ {
		if round > 0 {
			arrivals(arrive)
		}
		f.compare(q)
		f.compare(other)
		if !f.loaded(0) || !f.loaded(1) {
			t.Fatalf("round %d: namespace at its quota in memory %v, other namespace %v; want both", round, f.loaded(0), f.loaded(1))
		}
		var fresh columns
		err := f.db.InReadTx(ctx, func(tx *store.Tx) error {
			var err error
			fresh, err = loadColumns(ctx, tx, f.ns[0].ID, 0, quota, f.nowMs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e := f.copies.cols.ns[f.ns[0].ID]
		if e.cols.len() != quota {
			t.Fatalf("round %d: copy of %d rows, want %d", round, e.cols.len(), quota)
		}
		if got, want := e.cols.bytes(), fresh.bytes(); got > maxGrow*want {
			t.Fatalf("round %d: copy of %d bytes, a fresh load %d: over %d times", round, got, want, maxGrow)
		} else if got > largest {
			largest, freshest = got, want
		}
		if n := f.copies.cols.loads; n != 2 {
			t.Fatalf("round %d: namespaces loaded %d times, want once each (caught up, never evicted)", round, n)
		}
	}
	t.Logf("largest copy %d bytes, where a fresh load took %d", largest, freshest)
}

package inbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// compactMessage is a small text message of about 1 KB, different for each i,
// with a link and a code for the body to carry.
func compactMessage(i int, to string) []byte {
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore")
	var b strings.Builder
	fmt.Fprintf(&b, "From: Sender <s@example.com>\r\nTo: %s\r\nSubject: Your code %06d\r\nMessage-ID: <%d@compact.test>\r\n\r\n", to, 100000+i, i)
	for j := 0; b.Len() < 900; j++ {
		b.WriteString(words[(i*7+j*j)%len(words)] + " ")
	}
	fmt.Fprintf(&b, "\r\nConfirm: https://app.example/confirm?n=%d\r\n", i)
	return []byte(b.String())
}

// compactNamespaces returns three namespaces of one organisation: two that
// keep raw sources and one that does not.
func compactNamespaces(t *testing.T, db *store.DB) (a, b, noRaw tenant.Namespace) {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	org, err := ts.OrgByName(ctx, tenant.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	a, err = ts.CreateNamespace(ctx, org.ID, "keep-a", tenant.Settings{})
	if err == nil {
		b, err = ts.CreateNamespace(ctx, org.ID, "keep-b", tenant.Settings{})
	}
	if err == nil {
		noRaw, err = ts.CreateNamespace(ctx, org.ID, "no-raw", tenant.Settings{CaptureRawEmail: &off})
	}
	if err != nil {
		t.Fatal(err)
	}
	return a, b, noRaw
}

func target(ns tenant.Namespace) Target {
	return Target{Namespace: ns, Recipients: []string{"x@" + ns.Name + ".localhost"}}
}

// readBack is everything a client can read of an email: the resource as JSON,
// its raw source, and the resource as a search returns it.
func readBack(t *testing.T, s *Searcher, id string) string {
	t.Helper()
	ctx := context.Background()
	e, err := s.ByID(ctx, id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	doc, _ := json.Marshal(e.Email)
	raw, err := s.RawMessage(ctx, id)
	if err == ErrRawNotCaptured {
		raw = []byte("(not captured)")
	} else if err != nil {
		t.Fatalf("raw source of %s: %v", id, err)
	}
	res, err := s.Search(ctx, Query{NamespaceID: e.NamespaceID, SubjectIncludes: strings.TrimPrefix(e.Subject, "Your "), Limit: 10})
	if err != nil || len(res.Emails) != 1 {
		t.Fatalf("search for %s: %d found, %v", id, len(res.Emails), err)
	}
	found, _ := json.Marshal(res.Emails[0])
	return string(doc) + "\n" + string(raw) + "\n" + string(found)
}

// Compaction changes how content is stored, never what is read: every email,
// its raw source and its search result read back byte for byte the same; no raw
// source is left pending, none without an email, and a raw source shared by
// the emails of one delivery stays shared. On PostgreSQL nothing is pending
// in the first place.
func TestCompactionKeepsEveryEmailAsItWas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, b, noRaw := compactNamespaces(t, db)
		in := NewIngester(db, notify.NewHub())
		defer in.Close()
		s := NewSearcher(db)
		var ids []string
		for i := 0; i < 150; i++ {
			targets := []Target{target(a)}
			switch {
			case i%5 == 0:
				targets = append(targets, target(b)) // one raw source for both
			case i%7 == 0:
				targets = append(targets, target(noRaw)) // one with the body after the raw source, one with its own
			}
			got, err := in.Deliver(ctx, compactMessage(i, "x@keep-a.localhost"), Envelope{ClientIP: "127.0.0.1"}, targets)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, got...)
		}
		// A large message keeps its body in its row and is compressed at once.
		large := append(compactMessage(1000, "x@keep-a.localhost"), bytes.Repeat([]byte("0123456789abcdef\r\n"), 4000)...)
		got, err := in.Deliver(ctx, large, Envelope{}, []Target{target(a)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)

		pending := countRows(t, db, "SELECT COUNT(*) FROM raw_sources WHERE codec = 2")
		if want := 150; db.Dialect == store.SQLite && pending != want {
			t.Fatalf("%d raw sources pending after ingest, want %d (one per small delivery)", pending, want)
		} else if db.Dialect == store.Postgres && pending != 0 {
			t.Fatalf("%d raw sources pending on PostgreSQL", pending)
		}
		// Delete both emails of one shared delivery and one of another's.
		err = db.InTx(ctx, func(tx *store.Tx) error {
			seqs, del, err := selectEmails(ctx, tx, "SELECT seq, id FROM emails WHERE id IN (?, ?, ?)", ids[0], ids[1], ids[7])
			if err != nil {
				return err
			}
			return deleteEmails(ctx, tx, seqs, del)
		})
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]string{}
		for _, id := range ids[2:] {
			if id != ids[7] {
				before[id] = readBack(t, s, id)
			}
		}
		shared := countRows(t, db, "SELECT COUNT(*) FROM emails WHERE raw_id IS NOT NULL") - countRows(t, db, "SELECT COUNT(DISTINCT raw_id) FROM emails")

		n, err := in.Compact(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := max(0, pending-1); n != want {
			t.Errorf("compacted %d raw sources, want %d", n, want)
		}
		if got := countRows(t, db, "SELECT COUNT(*) FROM raw_sources WHERE codec = 2"); got != 0 {
			t.Errorf("%d raw sources still pending", got)
		}
		if got := countRows(t, db, "SELECT COUNT(*) FROM raw_sources r WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.raw_id = r.id)"); got != 0 {
			t.Errorf("%d raw sources without an email", got)
		}
		if got := countRows(t, db, "SELECT COUNT(*) FROM emails WHERE raw_id IS NOT NULL") - countRows(t, db, "SELECT COUNT(DISTINCT raw_id) FROM emails"); got != shared {
			t.Errorf("%d emails share a raw source after compaction, %d before", got, shared)
		}
		for id, want := range before {
			if got := readBack(t, s, id); got != want {
				t.Fatalf("email %s reads differently after compaction:\n%s\nbefore:\n%s", id, got, want)
			}
		}
		if n, err := in.Compact(ctx); n != 0 || err != nil {
			t.Errorf("a second compaction moved %d (%v)", n, err)
		}
		if p := in.compact.pending.Load(); p != 0 {
			t.Errorf("pending estimate %d after compaction", p)
		}
	})
}

// pagesInUse and pagesInFile are the database's pages holding data and all
// of its pages (free ones too).
func pages(t *testing.T, db *store.DB) (inUse, inFile int) {
	t.Helper()
	free := countRows(t, db, "SELECT freelist_count FROM pragma_freelist_count()")
	inFile = countRows(t, db, "SELECT page_count FROM pragma_page_count()")
	return inFile - free, inFile
}

// Compaction leaves the store as small as compressing at ingest would: the
// compressed copies take no more pages than content compressed at once, and
// the pages the uncompressed rows held are reused by the next messages, so a
// second round grows the file no more than it grows a store that compresses
// at ingest. (Rewriting the rows in place would leave every page as full as it
// was.)
func TestCompactionFreesPages(t *testing.T) {
	ctx := context.Background()
	type store1 struct {
		db *store.DB
		in *Ingester
		ns tenant.Namespace
	}
	open := func(deferSmall bool) store1 {
		db := storetest.Open(t, store.SQLite)
		ns, _, _ := compactNamespaces(t, db)
		in := NewIngester(db, notify.NewHub())
		in.deferSmall = deferSmall
		t.Cleanup(in.Close)
		return store1{db, in, ns}
	}
	later, atOnce := open(true), open(false)
	round := func(s store1, from int) {
		for i := from; i < from+800; i++ {
			if _, err := s.in.Deliver(ctx, compactMessage(i, "x@keep-a.localhost"), Envelope{}, []Target{target(s.ns)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.in.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	round(later, 0)
	round(atOnce, 0)
	useLater, fileLater := pages(t, later.db)
	useAtOnce, fileAtOnce := pages(t, atOnce.db)
	if float64(useLater) > 1.05*float64(useAtOnce)+4 {
		t.Errorf("after compaction %d pages hold data, compressed at ingest %d", useLater, useAtOnce)
	}
	round(later, 800)
	round(atOnce, 800)
	useLater2, fileLater2 := pages(t, later.db)
	useAtOnce2, fileAtOnce2 := pages(t, atOnce.db)
	if float64(useLater2) > 1.05*float64(useAtOnce2)+4 {
		t.Errorf("after a second round %d pages hold data, compressed at ingest %d", useLater2, useAtOnce2)
	}
	if grew, want := fileLater2-fileLater, fileAtOnce2-fileAtOnce; float64(grew) > 1.1*float64(want)+8 {
		t.Errorf("a second round grew the file by %d pages, compressing at ingest by %d: freed pages were not reused", grew, want)
	}
	t.Logf("pages in use / in the file: compacted %d/%d then %d/%d, compressed at ingest %d/%d then %d/%d",
		useLater, fileLater, useLater2, fileLater2, useAtOnce, fileAtOnce, useAtOnce2, fileAtOnce2)
}

// The compactor leaves ingest alone while it is busy and the backlog small;
// it compresses once the backlog passes its limit, busy or not, and once
// ingest has been quiet.
func TestCompactorWaitsForQuietOrBacklog(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	ns, _, _ := compactNamespaces(t, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	deliver := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := in.Deliver(ctx, compactMessage(i, "x@keep-a.localhost"), Envelope{}, []Target{target(ns)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pending := func() int { return countRows(t, db, "SELECT COUNT(*) FROM raw_sources WHERE codec = 2") }
	run := func(quiet time.Duration, backlog int64) (stop func()) {
		in.compact.poll, in.compact.quiet, in.compact.backlog = 5*time.Millisecond, quiet, backlog
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- in.RunCompactor(rctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d raw sources pending", what, pending())
			}
		}
	}

	// Never quiet, a backlog far away: 40 polls later nothing has moved.
	stop := run(time.Hour, 1<<40)
	deliver(10)
	time.Sleep(200 * time.Millisecond)
	stop()
	if got := pending(); got != 10 {
		t.Fatalf("the compactor moved %d raw sources while ingest was busy and the backlog small", 10-got)
	}
	// Past the backlog it compresses although ingest never rests.
	stop = run(time.Hour, 5_000)
	deliver(10)
	eventually("past the backlog", func() bool { return pending() < 20 })
	stop()
	// Quiet, it compresses everything.
	stop = run(20*time.Millisecond, 1<<40)
	deliver(5)
	eventually("when quiet", func() bool { return pending() == 0 })
	stop()
}

// The compactor's place is in the store: an ingester started later (a
// restart) compresses what an earlier one left pending, and nothing twice.
func TestCompactionResumesAfterARestart(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	ns, _, _ := compactNamespaces(t, db)
	first := NewIngester(db, notify.NewHub())
	for i := 0; i < 100; i++ {
		if _, err := first.Deliver(ctx, compactMessage(i, "x@keep-a.localhost"), Envelope{}, []Target{target(ns)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := first.compactOnce(ctx); n != compactBatch || err != nil {
		t.Fatalf("first batch: %d (%v)", n, err)
	}
	first.Close()

	second := NewIngester(db, notify.NewHub())
	defer second.Close()
	top := int64(countRows(t, db, "SELECT MAX(id) FROM raw_sources"))
	if n, err := second.Compact(ctx); n != 100-compactBatch || err != nil {
		t.Fatalf("after the restart %d raw sources compacted (%v), want %d", n, err, 100-compactBatch)
	}
	var cursor int64
	if err := db.QueryRow(ctx, "SELECT raw_cursor FROM inbox_compaction").Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if cursor < top {
		t.Errorf("cursor %d after everything was compacted, the newest raw source was %d before", cursor, top)
	}
	third := NewIngester(db, notify.NewHub())
	defer third.Close()
	if n, err := third.Compact(ctx); n != 0 || err != nil {
		t.Errorf("a third start compacted %d (%v)", n, err)
	}
}

// Emails deleted between the compactor's read and its move (the reaper, a
// quota, DELETE) take their raw source with them: the compactor stores no copy
// of it.
func TestCompactionSkipsSourcesDeletedMeanwhile(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	ns, _, _ := compactNamespaces(t, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	var ids []string
	for i := 0; i < 5; i++ {
		got, err := in.Deliver(ctx, compactMessage(i, "x@keep-a.localhost"), Envelope{}, []Target{target(ns)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	in.compact.beforeMove = func() {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			seqs, del, err := selectEmails(ctx, tx, "SELECT seq, id FROM emails WHERE id IN (?, ?)", ids[1], ids[3])
			if err != nil {
				return err
			}
			return deleteEmails(ctx, tx, seqs, del)
		})
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := in.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, db, "SELECT COUNT(*) FROM raw_sources"); got != 3 {
		t.Errorf("%d raw sources for 3 emails", got)
	}
	if got := countRows(t, db, "SELECT COUNT(*) FROM raw_sources WHERE codec <> 1"); got != 0 {
		t.Errorf("%d raw sources not compressed", got)
	}
	if got := countRows(t, db, "SELECT COUNT(*) FROM raw_sources r WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.raw_id = r.id)"); got != 0 {
		t.Errorf("%d raw sources without an email", got)
	}
}

package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Raw sources stored before migration 0009 (content-addressed blobs found
// through raw_messages, or bytes in the raw_messages row itself) move to
// raw_sources, read back byte for byte, and leave no blob behind.
func TestRawSourcesMigrated(t *testing.T) {
	eachDialectAt(t, 8, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ns := defaultNamespace(t, db)
		big := bytes.Repeat([]byte("a compressible line of a raw message\r\n"), 200)
		raws := map[string][]byte{
			"blob-a":   append([]byte("Subject: a\r\n\r\n"), big...),
			"blob-b":   append([]byte("Subject: a\r\n\r\n"), big...), // the same delivery in a second namespace
			"inline-c": []byte("Subject: c\r\n\r\nstored in the row\r\n"),
			"none-d":   nil, // not captured
		}
		shared := newHashedBlob(raws["blob-a"], contentHash(raws["blob-a"]))
		if shared.codec == codecNone {
			t.Fatal("test blob not compressed")
		}
		now := time.Now().UnixMilli()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := db.Exec(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		exec("INSERT INTO blobs (hash, codec, size, data) VALUES (?, ?, ?, ?)", shared.hash, shared.codec, shared.size, shared.data)
		for _, id := range []string{"blob-a", "blob-b", "inline-c", "none-d"} {
			exec(`INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc, body)
					VALUES (?, ?, ?, ?, '', '', ?, '', '', '', ?, NULL)`, id, ns.ID, now, now+3600_000, len(raws[id]),
				fmt.Sprintf(`{"id":%q,"subject":""}`, id))
			switch id {
			case "blob-a", "blob-b":
				exec("INSERT INTO raw_messages (email_id, data, blob_hash) VALUES (?, ?, ?)", id, []byte{}, shared.hash)
			case "inline-c":
				exec("INSERT INTO raw_messages (email_id, data, blob_hash) VALUES (?, ?, NULL)", id, raws[id])
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		s := NewSearcher(db, DefaultColumnBudget)
		for id, want := range raws {
			got, err := s.RawMessage(ctx, id)
			if want == nil {
				if !errors.Is(err, ErrRawNotCaptured) {
					t.Errorf("%s: err %v, want ErrRawNotCaptured", id, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: raw source read back as %d bytes (%v), want %d", id, len(got), err, len(want))
			}
			if size, err := s.RawSize(ctx, id); err != nil || size != int64(len(want)) {
				t.Errorf("%s: raw size %d (%v), want %d", id, size, err, len(want))
			}
		}
		var blobs, sources int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM blobs").Scan(&blobs)
		db.QueryRow(ctx, "SELECT COUNT(*) FROM raw_sources").Scan(&sources)
		if blobs != 0 || sources != 3 {
			t.Errorf("after the migration: %d blobs, %d raw sources; want 0 and 3", blobs, sources)
		}
	})
}

// eachDialectAt runs fn on a fresh store of each dialect migrated up to
// version, for tests of a migration that moves rows written the old way.
func eachDialectAt(t *testing.T, version int, fn func(t *testing.T, db *store.DB)) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, storetest.URL(t, d))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.MigrateTo(ctx, version); err != nil {
				t.Fatal(err)
			}
			fn(t, db)
		})
	}
}

// Migration 0011 rebuilds email_recipients on SQLite as a WITHOUT ROWID table:
// every row is kept and to_addr_prefix still finds its email.
func TestRecipientsKeptByRebuild(t *testing.T) {
	eachDialectAt(t, 10, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ns := defaultNamespace(t, db)
		in := NewIngester(db, notify.NewHub())
		for i := 0; i < 3; i++ {
			raw := []byte(fmt.Sprintf("From: a@b.c\r\nTo: user%d@default.localhost, shared@default.localhost\r\nSubject: m%d\r\n\r\nbody\r\n", i, i))
			if _, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{fmt.Sprintf("user%d@default.localhost", i)}}}); err != nil {
				t.Fatal(err)
			}
		}
		in.Close()
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM email_recipients").Scan(&n)
		if n != 6 {
			t.Errorf("%d recipient rows after the rebuild, want 6", n)
		}
		s := NewSearcher(db, DefaultColumnBudget)
		for prefix, want := range map[string]int{"user1@": 1, "shared@": 3, "user": 3, "nobody": 0} {
			res, err := s.Search(ctx, Query{NamespaceID: ns.ID, Limit: MaxLimit, ToAddrPrefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != want || len(res.Emails) != want {
				t.Errorf("to_addr_prefix %q: total %d, %d emails; want %d", prefix, res.Total, len(res.Emails), want)
			}
		}
	})
}

// defaultNamespace bootstraps db's first organisation and returns its namespace
// "default".
func defaultNamespace(t testing.TB, db *store.DB) tenant.Namespace {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 24*time.Hour)
	if _, err := ts.Bootstrap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ns, err := ts.NamespaceByName(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

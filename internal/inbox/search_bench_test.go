package inbox_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// searchBenchEmails is the namespace size of BenchmarkSearch; CATCHBOX_BENCH_EMAILS
// overrides it.
func searchBenchEmails() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("CATCHBOX_BENCH_EMAILS"), &n); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// seedSearch writes n emails into one namespace directly (the rows ingest would
// write, without parsing), for the search benchmark. Email i has the subject
// "<topic i mod 8> for user <hash of i>", goes to user<i mod 500>-<i>@..., and
// comes from sender<i mod 97>@example<i mod 13>.com.
func seedSearch(b *testing.B, db *store.DB, n int) tenant.Namespace {
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("bench-secret-key-0123456789")), 720*time.Hour)
	if _, err := ts.Bootstrap(ctx, ""); err != nil {
		b.Fatal(err)
	}
	ns, err := ts.NamespaceByName(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	topics := []string{"Password reset", "Welcome aboard", "Your invoice", "Verify your email", "Weekly digest", "Order shipped", "Security alert", "New login"}
	now := time.Now().UnixMilli()
	for start := 0; start < n; start += 5000 {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := start; i < start+5000 && i < n; i++ {
				subject := fmt.Sprintf("%s for user %08x", topics[i%len(topics)], scramble(i))
				from := fmt.Sprintf("sender%d@example%d.com", i%97, i%13)
				doc := fmt.Sprintf(`{"id":"x","from":{"address":%q},"to":[],"subject":%q,"received_date":"","received_timestamp":0,"expires_timestamp":0}`, from, subject)
				var seq int64
				if err := tx.QueryRow(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
					VALUES (?, ?, ?, ?, ?, ?, 1000, '127.0.0.1', 'bench', ?, ?) RETURNING seq`,
					tenant.NewID(), ns.ID, now-int64(n-i)*10, now+86_400_000, from, subject, from, doc).Scan(&seq); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "INSERT INTO email_recipients (namespace_id, addr, email_seq) VALUES (?, ?, ?)",
					ns.ID, fmt.Sprintf("user%d-%d@default.localhost", i%500, i), seq); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// What the ingester maintains as it commits: the counts.
	if _, err := db.Exec(ctx, "INSERT INTO namespace_counts (namespace_id, shard, emails) SELECT namespace_id, 0, COUNT(*) FROM emails GROUP BY namespace_id"); err != nil {
		b.Fatal(err)
	}
	if db.Dialect == store.Postgres {
		if _, err := db.Exec(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
	return ns
}

// BenchmarkSearch measures the first page (limit 10, with its total_count) of
// inbox searches over one namespace of 100,000 emails, on both stores, and on
// SQLite without the in-memory copies too (substrings checked row by row, as
// in a namespace over the copies' budget). Besides ns/op it reports p50 and
// p99 in milliseconds. Each query runs once untimed first, which loads the
// copy.
func BenchmarkSearch(b *testing.B) {
	n := searchBenchEmails()
	for _, st := range []struct {
		name    string
		d       store.Dialect
		columns bool // SQLite: substring searches from the namespace's copy in memory
	}{
		{"sqlite", store.SQLite, true},
		{"sqlite-no-copies", store.SQLite, false},
		{"postgres", store.Postgres, false},
	} {
		b.Run(st.name, func(b *testing.B) {
			db := storetest.Open(b, st.d)
			ns := seedSearch(b, db, n)
			s := inbox.NewSearcher(db, inbox.DefaultColumnBudget)
			if !st.columns {
				s.SetColumnBudget(0)
			}
			for _, c := range []struct {
				name string
				q    inbox.Query
			}{
				{"unfiltered", inbox.Query{}},
				{"subject_includes=one", inbox.Query{SubjectIncludes: fmt.Sprintf("%08x", scramble(4242))}},
				{"subject_includes=one,common-words", inbox.Query{SubjectIncludes: fmt.Sprintf("for user %08x", scramble(4242))}},
				{"subject_includes=12.5%", inbox.Query{SubjectIncludes: "verify your"}},
				{"subject_includes=none,common-words", inbox.Query{SubjectIncludes: "user for"}},
				{"to_addr_prefix=one", inbox.Query{ToAddrPrefix: "user42-4242@"}},
				{"to_addr_prefix=200", inbox.Query{ToAddrPrefix: "user42-"}},
				{"from_addr_includes=1%", inbox.Query{FromAddrIncludes: "sender5@"}},
				{"to_addr_prefix=200,subject_includes=12.5%", inbox.Query{ToAddrPrefix: "user42-", SubjectIncludes: "your invoice"}},
				{"to_addr_prefix=all,subject_includes=one", inbox.Query{ToAddrPrefix: "user", SubjectIncludes: fmt.Sprintf("%08x", scramble(4242))}},
				{"to_addr_prefix=all,subject_includes=12.5%", inbox.Query{ToAddrPrefix: "user", SubjectIncludes: "verify your"}},
			} {
				q := c.q
				q.NamespaceID, q.Limit = ns.ID, 10
				// Once untimed: the namespace's copy is loaded by the first
				// substring search.
				if _, err := s.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				b.Run(c.name, func(b *testing.B) {
					lat := make([]time.Duration, 0, b.N)
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if _, err := s.Search(context.Background(), q); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

// scramble spreads i over 32 bits (Knuth's multiplicative hash), for subjects
// that share no substring beyond their topic.
func scramble(i int) uint32 {
	x := uint32(i)
	return x * 2654435761
}

package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// benchEmails is the namespace size of BenchmarkInboxPage; CATCHBOX_BENCH_EMAILS
// overrides it.
func benchEmails() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("CATCHBOX_BENCH_EMAILS"), &n); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// seedInbox writes n emails into namespace default directly (the rows ingest
// writes, without parsing), as the inbox's search benchmark does.
func seedInbox(b *testing.B, svc *server.Service, n int) {
	ctx := context.Background()
	db := svc.DB
	ns, err := svc.Tenants.NamespaceByName(ctx, "default")
	if err != nil {
		b.Fatal(err)
	}
	topics := []string{"Password reset", "Welcome aboard", "Your invoice", "Verify your email", "Weekly digest", "Order shipped", "Security alert", "New login"}
	now := time.Now().UnixMilli()
	for start := 0; start < n; start += 5000 {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			for i := start; i < start+5000 && i < n; i++ {
				id := tenant.NewID()
				subject := fmt.Sprintf("%s for user %d", topics[i%len(topics)], i*7919%100003)
				from := fmt.Sprintf("sender%d@example%d.com", i%97, i%13)
				received := now - int64(n-i)*10
				doc := fmt.Sprintf(`{"id":%q,"from":{"address":%q,"name":"Sender %d"},"to":[{"address":"user%d@default.localhost"}],"subject":%q,"received_date":"","received_timestamp":%d,"expires_timestamp":%d,"links":[],"codes":["%06d"]}`,
					id, from, i%97, i%500, subject, received/1000, (now+86_400_000)/1000, i%1000000)
				var seq int64
				if err := tx.QueryRow(ctx, `INSERT INTO emails (id, namespace_id, received_ms, expires_ms, from_addr, subject, size, client_ip, helo, mail_from, doc)
					VALUES (?, ?, ?, ?, ?, ?, 1000, '127.0.0.1', 'bench', ?, ?) RETURNING seq`,
					id, ns.ID, received, now+86_400_000, from, subject, from, doc).Scan(&seq); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "INSERT INTO email_recipients (namespace_id, addr, email_seq) VALUES (?, ?, ?)",
					ns.ID, fmt.Sprintf("user%d@default.localhost", i%500), seq); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, "INSERT INTO namespace_counts (namespace_id, shard, emails) SELECT namespace_id, 0, COUNT(*) FROM emails GROUP BY namespace_id"); err != nil {
		b.Fatal(err)
	}
	if db.Dialect == store.Postgres {
		if _, err := db.Exec(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInboxPage is the server time of the inbox page (the whole handler:
// route table, session lookup, search, template) over a namespace of 100,000
// emails, on both stores: the first page, a page deep in the inbox, and a
// subject search. No network: the request goes to the handler directly.
// Besides ns/op it reports p50 and p99 in milliseconds.
func BenchmarkInboxPage(b *testing.B) {
	n := benchEmails()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(d.String(), func(b *testing.B) {
			if d == store.Postgres && os.Getenv("CATCHBOX_TEST_POSTGRES_URL") == "" {
				b.Skip("CATCHBOX_TEST_POSTGRES_URL not set")
			}
			cfg := servertest.Config(b)
			cfg.RateLimitKey, cfg.RateLimitIP = 0, 0
			svc := servertest.New(b, storetest.Open(b, d), cfg)
			if _, err := svc.Tenants.CreateUser(context.Background(), "bench@example.com", password, mustOrg(b, svc).ID); err != nil {
				b.Fatal(err)
			}
			seedInbox(b, svc, n)
			cookie := benchSignIn(b, svc)
			for _, q := range []struct{ name, path string }{
				{"first-page", "/inboxes/default"},
				{"middle", fmt.Sprintf("/inboxes/default?offset=%d", n/2)},
				{"subject", "/inboxes/default?subject_includes=invoice"},
			} {
				b.Run(q.name, func(b *testing.B) {
					get := func() time.Duration {
						r := httptest.NewRequest(http.MethodGet, q.path, nil)
						r.AddCookie(cookie)
						w := httptest.NewRecorder()
						start := time.Now()
						svc.Handler.ServeHTTP(w, r)
						took := time.Since(start)
						if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "mail-row") {
							b.Fatalf("%s: %d", q.path, w.Code)
						}
						return took
					}
					get() // loads what a first search loads
					times := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						times = append(times, get())
					}
					b.StopTimer()
					sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
					b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		})
	}
}

func mustOrg(b *testing.B, svc *server.Service) tenant.Org {
	o, err := svc.Tenants.OrgByName(context.Background(), tenant.DefaultName)
	if err != nil {
		b.Fatal(err)
	}
	return o
}

func benchSignIn(b *testing.B, svc *server.Service) *http.Cookie {
	form := url.Values{"email": {"bench@example.com"}, "password": {password}}
	r := httptest.NewRequest(http.MethodPost, "/signin", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	svc.Handler.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		if c.Name == tenant.SessionCookie {
			return c
		}
	}
	b.Fatalf("sign in: %d", w.Code)
	return nil
}

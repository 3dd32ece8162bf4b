package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// jsonLog sends the process log, as JSON lines, to a buffer until the test
// ends, and returns a function that parses the lines logged so far.
func jsonLog(t *testing.T) (*syncBuffer, func() []map[string]any) {
	t.Helper()
	var buf syncBuffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })
	return &buf, func() []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("log line %q is not JSON: %v", line, err)
			}
			out = append(out, m)
		}
		return out
	}
}

// find returns the first log record with msg whose attributes include every
// pair of want, or nil.
func find(recs []map[string]any, msg string, want map[string]any) map[string]any {
	for _, r := range recs {
		if r["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if r[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// TestObservability drives the service as catchbox serve builds it, with
// JSON logs, over HTTP and SMTP, and checks what an operator sees: an access
// log line per request with its route pattern, status, request id and key id
// (never the key), a client's failures at INFO with their code, one line per SMTP
// transaction (stored and rejected), the Prometheus families on /metrics,
// /readyz and /api/version.
func TestObservability(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		raw, records := jsonLog(t)
		cfg := servertest.Config(t)
		cfg.CatchAll = "none" // a refused transaction is logged too
		s := servertest.New(t, db, cfg)
		srv := servertest.Serve(t, s)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.SMTP.Serve(l)
		t.Cleanup(func() { s.SMTP.Shutdown(context.Background()) })

		if err := smtp.SendMail(l.Addr().String(), nil, "sender@example.org", []string{"alice@default.localhost"},
			message("alice@default.localhost", "observed")); err != nil {
			t.Fatal(err)
		}
		if err := smtp.SendMail(l.Addr().String(), nil, "sender@example.org", []string{"nobody@nosuch.localhost"},
			message("nobody@nosuch.localhost", "refused")); err == nil {
			t.Fatal("mail to an unknown namespace was accepted")
		}

		get := func(path, key string) (*http.Response, string) {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp, string(body)
		}
		resp, body := get("/api/emails/default/inbox?subject_includes=observed", s.NewKey)
		if resp.StatusCode != 200 || !strings.Contains(body, "observed") {
			t.Fatalf("search: %d %s", resp.StatusCode, body)
		}
		searchID := resp.Header.Get("X-Request-Id")
		missing, _ := get("/api/emails/nosuch/inbox", s.NewKey)
		if missing.StatusCode != 404 {
			t.Fatalf("unknown namespace: %d", missing.StatusCode)
		}
		get("/api/test", "cbx_wrong")

		org, _ := s.Tenants.OrgByName(context.Background(), tenant.DefaultName)
		keys, _ := s.Tenants.ListKeys(context.Background(), org.ID, false)
		recs := records()
		if r := find(recs, "HTTP request", map[string]any{"request_id": searchID}); r == nil ||
			r["route"] != "/api/emails/{namespace}/inbox" || r["status"] != 200.0 || r["method"] != "GET" ||
			r["key_id"] != keys[0].ID || r["level"] != "INFO" || r["bytes"].(float64) < 100 || r["duration_ms"] == nil {
			t.Errorf("access log of the search: %v", r)
		}
		if r := find(recs, "HTTP request", map[string]any{"request_id": missing.Header.Get("X-Request-Id")}); r == nil ||
			r["status"] != 404.0 || r["level"] != "INFO" || r["code"] != "namespace_not_found" && r["code"] != "not_found" {
			t.Errorf("access log of the 404: %v", r)
		}
		if r := find(recs, "HTTP request", map[string]any{"route": "/api/test", "status": 401.0}); r == nil || r["code"] != "invalid_api_key" || r["key_id"] != nil {
			t.Errorf("access log of the 401: %v", r)
		}
		if strings.Contains(raw.String(), s.NewKey) || strings.Contains(raw.String(), "cbx_wrong") || strings.Contains(raw.String(), "subject_includes") {
			t.Errorf("the log holds a key or a query:\n%s", raw.String())
		}
		if r := find(recs, "SMTP transaction", map[string]any{"result": "stored"}); r == nil || r["namespace"] != "default" ||
			r["recipients"] != 1.0 || r["sender"] != "sender@example.org" || r["reply"] != 250.0 || r["size"].(float64) < 100 || r["client_ip"] != "127.0.0.1" {
			t.Errorf("SMTP log of the stored message: %v", r)
		}
		if r := find(recs, "SMTP transaction", map[string]any{"result": "rejected"}); r == nil || r["recipients"] != 0.0 || r["refused_recipients"] != 1.0 {
			t.Errorf("SMTP log of the refused message: %v", r)
		}

		resp, body = get("/metrics", "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, want := range []string{
			`catchbox_http_requests_total{code="200",method="GET",route="/api/emails/{namespace}/inbox"}`,
			`catchbox_http_requests_total{code="401",method="GET",route="/api/test"}`,
			`catchbox_http_request_duration_seconds_bucket{method="GET",route="/api/emails/{namespace}/inbox",le="0.005"}`,
			`catchbox_smtp_sessions_total{result="accepted"}`,
			`catchbox_smtp_messages_total{result="stored"}`,
			`catchbox_smtp_messages_total{result="rejected"}`,
			`catchbox_ingest_batch_messages_count`,
			`catchbox_ingest_commit_seconds_count`,
			`catchbox_held_waits `,
			`catchbox_store_size_bytes `,
			`go_goroutines `,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if db.Dialect == store.SQLite && !strings.Contains(body, "catchbox_ingest_fsync_seconds_count") {
			t.Error("/metrics lacks the fsync latency")
		}

		if resp, body := get("/api/version", ""); resp.StatusCode != 200 || !strings.Contains(body, `"version":"dev"`) {
			t.Errorf("/api/version: %d %s", resp.StatusCode, body)
		}
		if resp, body := get("/readyz", ""); resp.StatusCode != 200 || !strings.Contains(body, "ready") {
			t.Errorf("/readyz: %d %s", resp.StatusCode, body)
		}
		// A store an older build migrated is not ready for this one.
		var last int
		db.QueryRow(context.Background(), "SELECT MAX(version) FROM schema_migrations").Scan(&last)
		var name string
		db.QueryRow(context.Background(), "SELECT name FROM schema_migrations WHERE version = ?", last).Scan(&name)
		db.Exec(context.Background(), "DELETE FROM schema_migrations WHERE version = ?", last)
		if resp, body := get("/readyz", ""); resp.StatusCode != 503 || !strings.Contains(body, "not_ready") || !strings.Contains(body, "1 store migrations are pending") {
			t.Errorf("/readyz with a migration missing: %d %s", resp.StatusCode, body)
		}
		db.Exec(context.Background(), "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)", last, name)
	})
}

package linkcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// env is catchbox serve built as the binary builds it, beside a loopback web
// site the test emails link to.
type env struct {
	t       *testing.T
	svc     *server.Service
	api     *httptest.Server
	key     string
	other   string // another organisation's key
	site    *httptest.Server
	mu      sync.Mutex
	hits    map[string]int // requests the site answered, by path
	started bool
}

func newEnv(t *testing.T, db *store.DB, mode string) *env {
	t.Helper()
	e := &env{t: t, hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/logo.png", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "image/png") })
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/older", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/older", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusMovedPermanently) })
	mux.HandleFunc("/gone", http.NotFound)
	e.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.hits[r.URL.Path]++
		e.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(e.site.Close)
	cfg := servertest.Config(t)
	cfg.Mode.Mode = mode
	e.svc = servertest.New(t, db, cfg)
	e.key = e.svc.NewKey
	_, e.other = servertest.Org(t, e.svc, "other")
	e.api = servertest.Serve(t, e.svc)
	return e
}

// startJobs runs the job queue's workers until the test ends.
func (e *env) startJobs() {
	if e.started {
		return
	}
	e.started = true
	servertest.StartJobs(e.t, e.svc)
}

// mail is an email whose HTML links to the site: a good link, a redirect
// chain, a dead link, an image, and (in the text part) the good link again.
func (e *env) mail() []byte {
	u := e.site.URL
	return []byte(strings.ReplaceAll(fmt.Sprintf(`From: Shop <news@shop.test>
To: mary@default.localhost
Subject: Our news
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary=b

--b
Content-Type: text/plain; charset=utf-8

Read it at %[1]s/ok
--b
Content-Type: text/html; charset=utf-8

<p><a href="%[1]s/ok">Read</a> <a href="%[1]s/old">Old page</a> <a href="%[1]s/gone">Gone</a>
<img src="%[1]s/logo.png" alt="Logo"> <a href="mailto:help@shop.test">Help</a></p>
--b--
`, u), "\n", "\r\n"))
}

func (e *env) deliver(raw []byte) string {
	e.t.Helper()
	ns, err := e.svc.Tenants.NamespaceByName(context.Background(), "default")
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := e.svc.Ingester.Deliver(context.Background(), raw, inbox.Envelope{ClientIP: "127.0.0.1", Helo: "shop.test", MailFrom: "news@shop.test"},
		[]inbox.Target{{Namespace: ns, Recipients: []string{"mary@default.localhost"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

func (e *env) call(method, path, key string) (int, http.Header, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.api.URL+path, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, m
}

// wait reads the check until it has ended; the wait has a deadline, so that
// a run that never ends fails the test.
func (e *env) wait(id string) map[string]any {
	e.t.Helper()
	return testkit.Await(e.t, "the link check of "+id+" to end", func() (map[string]any, bool) {
		code, _, body := e.call("GET", "/api/emails/"+id+"/link-check", e.key)
		if code != 200 {
			e.t.Fatalf("GET link check: %d %v", code, body)
		}
		s := body["status"]
		return body, s == "completed" || s == "failed"
	})
}

// byURL indexes a check's links by their URL.
func byURL(t *testing.T, body map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, l := range body["links"].([]any) {
		m := l.(map[string]any)
		out[m["url"].(string)] = m
	}
	return out
}

// TestLinkCheckLifecycle: 404 before any run; a run started (202), asked
// for again while pending (200), completed with each link's outcome, and
// started again (202, a new run); another organisation's email, an unknown
// id and a malformed one are 404 not_found.
func TestLinkCheckLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, config.Local)
		id := e.deliver(e.mail())
		path := "/api/emails/" + id + "/link-check"

		if code, _, body := e.call("GET", path, e.key); code != 404 || body["code"] != "link_check_not_found" {
			t.Fatalf("GET before a run: %d %v", code, body)
		}
		code, h, body := e.call("POST", path, e.key)
		if code != 202 || body["status"] != "pending" || body["started_at"] == nil || body["finished_at"] != nil ||
			len(body["links"].([]any)) != 0 || h.Get("Location") != path {
			t.Fatalf("first POST: %d %v %v", code, h, body)
		}
		started := body["started_at"].(string)
		if _, err := time.Parse(time.RFC3339, started); err != nil || !strings.HasSuffix(started, "Z") || len(started) != len("2026-11-22T03:23:50.123Z") {
			t.Errorf("started_at %q", started)
		}
		// The workers have not started: the run is still pending.
		if code, _, body := e.call("POST", path, e.key); code != 200 || body["status"] != "pending" || body["started_at"] != started {
			t.Fatalf("POST while pending: %d %v", code, body)
		}
		for _, p := range []string{path, "/api/emails/" + tenant.NewID() + "/link-check", "/api/emails/not-an-id/link-check"} {
			for _, m := range []string{"GET", "POST"} {
				key := e.other
				if p != path {
					key = e.key
				}
				if code, _, body := e.call(m, p, key); code != 404 || body["code"] != "not_found" {
					t.Errorf("%s %s: %d %v", m, p, code, body)
				}
			}
		}

		e.startJobs()
		body = e.wait(id)
		if body["status"] != "completed" || body["finished_at"] == nil || body["error"] != nil {
			t.Fatalf("check %v", body)
		}
		u := e.site.URL
		links := byURL(t, body)
		if len(links) != 4 {
			t.Fatalf("%d links, want 4: %v", len(links), body["links"])
		}
		for url, want := range map[string]string{
			u + "/ok":       `{"final_url":"` + u + `/ok","kind":"link","redirects":0,"status_code":200}`,
			u + "/old":      `{"final_url":"` + u + `/ok","kind":"link","redirects":2,"status_code":200}`,
			u + "/gone":     `{"error":"HTTP 404 Not Found","final_url":"` + u + `/gone","kind":"link","redirects":0,"status_code":404}`,
			u + "/logo.png": `{"final_url":"` + u + `/logo.png","kind":"image","redirects":0,"status_code":200}`,
		} {
			l := links[url]
			if l == nil {
				t.Errorf("%s not checked", url)
				continue
			}
			if _, ok := l["duration_ms"].(float64); !ok {
				t.Errorf("%s: duration_ms %v", url, l["duration_ms"])
			}
			delete(l, "duration_ms")
			delete(l, "url")
			if got, _ := json.Marshal(l); string(got) != want {
				t.Errorf("%s:\n got %s\nwant %s", url, got, want)
			}
		}
		// Each URL is asked for once: /ok is linked twice and reached by
		// the redirects, the dead link answers HEAD and GET.
		e.mu.Lock()
		hits := fmt.Sprint(e.hits["/ok"], e.hits["/old"], e.hits["/gone"], e.hits["/logo.png"])
		e.mu.Unlock()
		if hits != "2 1 2 1" {
			t.Errorf("requests to /ok /old /gone /logo.png: %s, want 2 1 2 1", hits)
		}

		// A run that ended is made again.
		if code, _, body := e.call("POST", path, e.key); code != 202 || body["status"] != "pending" {
			t.Fatalf("POST after a run: %d %v", code, body)
		}
		if body := e.wait(id); body["status"] != "completed" || len(body["links"].([]any)) != 4 {
			t.Fatalf("second run %v", body)
		}
	})
}

// TestLinkCheckServerMode: in server mode the same email's links, all on
// loopback, are refused without a request, each with the setting that would
// allow them; an operation's caller sees the same through the Go API.
func TestLinkCheckServerMode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, config.Server)
		id := e.deliver(e.mail())
		if code, _, body := e.call("POST", "/api/emails/"+id+"/link-check", e.key); code != 202 {
			t.Fatalf("POST: %d %v", code, body)
		}
		e.startJobs()
		body := e.wait(id)
		links := body["links"].([]any)
		if body["status"] != "completed" || len(links) != 4 {
			t.Fatalf("check %v", body)
		}
		for _, l := range links {
			m := l.(map[string]any)
			if m["status_code"] != nil || !strings.Contains(m["error"].(string), egress.Setting) {
				t.Errorf("link %v", m)
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if len(e.hits) != 0 {
			t.Errorf("the site was asked: %v", e.hits)
		}
	})
}

// TestLinkCheckOperations: the Go operations a dashboard or another
// listener calls, with a principal: typed results and the error vocabulary.
func TestLinkCheckOperations(t *testing.T) {
	e := newEnv(t, storetest.Open(t, store.SQLite), config.Local)
	ctx := context.Background()
	id := e.deliver(e.mail())
	org, err := e.svc.Tenants.OrgByName(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	p := tenant.Principal{Org: org, Orgs: []tenant.Org{org}}
	lc := e.svc.LinkCheck
	if _, err := lc.Get(ctx, p, id); err == nil || !strings.Contains(err.Error(), "no link check") {
		t.Fatalf("Get before a run: %v", err)
	}
	res, started, err := lc.Request(ctx, p, strings.ToUpper(id))
	if err != nil || !started || res.Status != linkcheck.StatusPending || !res.Live() {
		t.Fatalf("Request: %+v %v %v", res, started, err)
	}
	if _, started, err := lc.Request(ctx, p, id); err != nil || started {
		t.Fatalf("Request while pending: %v %v", started, err)
	}
	if _, _, err := lc.Request(ctx, tenant.Principal{}, id); err == nil || err.Error() != "email not found" {
		t.Fatalf("Request without an organisation: %v", err)
	}
}

// TestLinkCheckExpiryAndAbandonedRuns: the prune fails a run whose job never
// ran, which a new request then starts again; a check is gone 7 days after it
// completed, and the prune deletes it.
func TestLinkCheckExpiryAndAbandonedRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, config.Local)
		lc := e.svc.LinkCheck
		ns, _ := e.svc.Tenants.NamespaceByName(context.Background(), "default")
		long := 30 * 24 * 3600
		if _, err := e.svc.Tenants.UpsertNamespace(context.Background(), ns.OrgID, "default", tenant.Settings{RetentionTime: &long}); err != nil {
			t.Fatal(err)
		}
		id := e.deliver(e.mail())
		path := "/api/emails/" + id + "/link-check"
		if code, _, _ := e.call("POST", path, e.key); code != 202 {
			t.Fatal(code)
		}
		lc.Now = func() time.Time { return time.Now().Add(6 * time.Minute) }
		if err := lc.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		code, _, body := e.call("GET", path, e.key)
		if code != 200 || body["status"] != "failed" || !strings.Contains(fmt.Sprint(body["error"]), "stopped before it finished") || body["finished_at"] == nil {
			t.Fatalf("abandoned run: %d %v", code, body)
		}
		if code, _, body := e.call("POST", path, e.key); code != 202 || body["status"] != "pending" {
			t.Fatalf("POST after a failed run: %d %v", code, body)
		}
		lc.Now = time.Now
		e.startJobs()
		body = e.wait(id)
		fin, err := time.Parse(time.RFC3339, body["finished_at"].(string))
		if err != nil || body["status"] != "completed" {
			t.Fatalf("check %v", body)
		}
		lc.Now = func() time.Time { return fin.Add(linkcheck.TTL + time.Second) }
		if code, _, body := e.call("GET", path, e.key); code != 404 || body["code"] != "link_check_not_found" {
			t.Fatalf("GET past its expiry: %d %v", code, body)
		}
		if err := lc.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		var n int
		db.QueryRow(context.Background(), "SELECT COUNT(*) FROM link_checks").Scan(&n)
		if n != 0 {
			t.Errorf("%d checks left after the prune", n)
		}
	})
}

// TestLinkCheckOverSMTP: an email sent over real SMTP is checked through
// the API.
func TestLinkCheckOverSMTP(t *testing.T) {
	e := newEnv(t, storetest.Open(t, store.SQLite), config.Local)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.svc.SMTP.Serve(l)
	t.Cleanup(func() { e.svc.SMTP.Shutdown(context.Background()) })
	if err := smtp.SendMail(l.Addr().String(), nil, "news@shop.test", []string{"mary@default.localhost"}, e.mail()); err != nil {
		t.Fatal(err)
	}
	code, _, latest := e.call("GET", "/api/emails/default/latest", e.key)
	if code != 200 {
		t.Fatal(code, latest)
	}
	id := latest["data"].(map[string]any)["id"].(string)
	if code, _, _ := e.call("POST", "/api/emails/"+id+"/link-check", e.key); code != 202 {
		t.Fatal(code)
	}
	e.startJobs()
	links := byURL(t, e.wait(id))
	if l := links[e.site.URL+"/gone"]; l == nil || l["status_code"] != float64(404) {
		t.Errorf("dead link %v", l)
	}
	if l := links[e.site.URL+"/old"]; l == nil || l["status_code"] != float64(200) || l["redirects"] != float64(2) {
		t.Errorf("moved link %v", l)
	}
}

// BenchmarkLinkCheckAPI times a whole link check through the API, as a
// client sees it: POST, the job claimed by the queue's worker, the email's
// 100 links (one host on loopback, so 2 at a time) asked, the outcome
// committed, and the GET that first reads it completed (polled every 5 ms).
//
//	go test -run '^$' -bench LinkCheckAPI -benchtime 20x ./internal/linkcheck/
func BenchmarkLinkCheckAPI(b *testing.B) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer site.Close()
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil))) // a line per request
	defer slog.SetDefault(logger)
	db := storetest.Open(b, store.SQLite)
	cfg := servertest.Config(b)
	cfg.Mode.Mode = config.Local
	svc := servertest.New(b, db, cfg)
	api := servertest.Serve(b, svc)
	servertest.StartJobs(b, svc)
	var html strings.Builder
	for i := range 100 {
		fmt.Fprintf(&html, `<p><a href="%s/p/%d">Product %d</a></p>`, site.URL, i, i)
	}
	raw := "From: news@shop.test\r\nTo: mary@default.localhost\r\nSubject: 100 links\r\nContent-Type: text/html\r\n\r\n" + html.String() + "\r\n"
	ns, _ := svc.Tenants.NamespaceByName(context.Background(), "default")
	ids, err := svc.Ingester.Deliver(context.Background(), []byte(raw), inbox.Envelope{ClientIP: "127.0.0.1"},
		[]inbox.Target{{Namespace: ns, Recipients: []string{"mary@default.localhost"}}})
	if err != nil {
		b.Fatal(err)
	}
	path := api.URL + "/api/emails/" + ids[0] + "/link-check"
	do := func(method string) (int, linkcheck.Response) {
		req, _ := http.NewRequest(method, path, nil)
		req.Header.Set("X-Api-Key", svc.NewKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var out linkcheck.Response
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if code, _ := do("POST"); code != 202 {
			b.Fatalf("POST: %d", code)
		}
		// Looked at every 5 ms: the time is taken when the end is seen.
		var got linkcheck.Response
		testkit.EventuallyEvery(time.Minute, 5*time.Millisecond, func() bool {
			_, got = do("GET")
			return got.Status == "completed" || got.Status == "failed"
		})
		if got.Status != "completed" || len(got.Links) != 100 {
			b.Fatalf("check %+v", got)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

package deliverability_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/deliverability/dnstest"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// apiEnv is catchbox serve, built as the binary builds it, with its DNS on a
// test server and, when CATCHBOX_TEST_SPAMD_ADDR is set, a real spamd.
type apiEnv struct {
	t       *testing.T
	svc     *server.Service
	srv     *httptest.Server
	key     string
	other   string // another organisation's key
	signKey *rsa.PrivateKey
	started bool
}

func newAPIEnv(t *testing.T, db *store.DB, spamd bool) *apiEnv {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(k.Public())
	p := base64.StdEncoding.EncodeToString(der)
	dns := dnstest.Start(t,
		`shop.test. 300 IN TXT "v=spf1 ip4:192.0.2.0/24 ip4:127.0.0.1 -all"`,
		"shop.test. 300 IN MX 10 mx.shop.test.",
		"mx.shop.test. 300 IN A 192.0.2.25",
		"mail.shop.test. 300 IN A 192.0.2.10",
		`_dmarc.shop.test. 300 IN TXT "v=DMARC1; p=reject"`,
		fmt.Sprintf(`s1._domainkey.shop.test. 300 IN TXT "v=DKIM1; k=rsa; p=%s" "%s"`, p[:200], p[200:]),
		"10.2.0.192.in-addr.arpa. 300 IN PTR mail.shop.test.",
		"1.0.0.127.in-addr.arpa. 300 IN PTR localhost.",
		"localhost. 300 IN A 127.0.0.1",
	)
	cfg := servertest.Config(t)
	cfg.DNSServer, cfg.DNSTimeout = dns.Addr, 500*time.Millisecond
	cfg.DNSBLIPZones, cfg.DNSBLDomainZones = "zen.test", "dbl.test"
	if spamd {
		cfg.SpamdAddr = os.Getenv(deliverability.SpamdEnv)
		if cfg.SpamdAddr == "" {
			t.Skipf("%s not set: spamd tests skipped", deliverability.SpamdEnv)
		}
	}
	svc := servertest.New(t, db, cfg)
	e := &apiEnv{t: t, svc: svc, key: svc.NewKey, signKey: k}
	_, e.other = servertest.Org(t, svc, "other")
	e.srv = servertest.Serve(t, svc)
	return e
}

// startJobs runs the job queue's workers until the test ends.
func (e *apiEnv) startJobs() {
	if e.started {
		return
	}
	e.started = true
	servertest.StartJobs(e.t, e.svc)
}

// deliver stores raw in namespace as the SMTP listener would, from the test
// sender 192.0.2.10, and returns the email's id.
func (e *apiEnv) deliver(namespace string, raw []byte) string {
	e.t.Helper()
	ns, err := e.svc.Tenants.NamespaceByName(context.Background(), namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := e.svc.Ingester.Deliver(context.Background(), raw,
		inbox.Envelope{ClientIP: "192.0.2.10", Helo: "mail.shop.test", MailFrom: "bounce@shop.test"},
		[]inbox.Target{{Namespace: ns, Recipients: []string{"mary@" + namespace + ".localhost"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

func (e *apiEnv) signed(raw string) []byte {
	var b bytes.Buffer
	err := dkim.Sign(&b, strings.NewReader(strings.ReplaceAll(raw, "\n", "\r\n")), &dkim.SignOptions{Domain: "shop.test", Selector: "s1", Signer: e.signKey})
	if err != nil {
		e.t.Fatal(err)
	}
	return b.Bytes()
}

const orderMail = `From: Orders <orders@shop.test>
To: mary@default.localhost
Subject: Your order has shipped
Date: Wed, 25 Nov 2026 09:00:00 +0000
Message-ID: <order-7@shop.test>
Content-Type: text/plain; charset=utf-8

Hello Mary, your order has shipped.
`

func (e *apiEnv) call(method, path, key string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, nil)
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
	return resp.StatusCode, m
}

// waitReport reads the report until it has ended (the job runs in the
// background); the wait is bounded so that a broken run fails the test.
func (e *apiEnv) waitReport(id string) map[string]any {
	e.t.Helper()
	// Two minutes: spamd is slow on a loaded machine.
	return testkit.AwaitWithin(e.t, 2*time.Minute, "the report of "+id+" to end", func() (map[string]any, bool) {
		code, body := e.call("GET", "/api/emails/"+id+"/deliverability-report", e.key)
		if code != 200 {
			e.t.Fatalf("GET report: %d %v", code, body)
		}
		s := body["status"]
		return body, s == "completed" || s == "failed"
	})
}

// TestReportLifecycle: requested (202), asked again while pending (200),
// completed with every section, refreshed (202 and a new run), and the
// access rules: another organisation's email is 404, as is an email never
// reported on.
func TestReportLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, false)
		id := e.deliver("default", e.signed(orderMail))
		path := "/api/emails/" + id + "/deliverability-report"

		if code, body := e.call("GET", path, e.key); code != 404 || body["code"] != "not_found" {
			t.Fatalf("GET before a request: %d %v", code, body)
		}
		code, body := e.call("POST", path, e.key)
		if code != 202 || body["status"] != "pending" || body["analysis_version"] != "1.1.0" || body["expires_at"] == nil || body["report"] != nil {
			t.Fatalf("first POST: %d %v", code, body)
		}
		// The workers have not started: the run is still pending.
		if code, body := e.call("POST", path, e.key); code != 200 || body["status"] != "pending" {
			t.Fatalf("POST while pending: %d %v", code, body)
		}
		for _, p := range []string{path, "/api/emails/" + tenant.NewID() + "/deliverability-report", "/api/emails/not-an-id/deliverability-report"} {
			for _, m := range []string{"GET", "POST"} {
				key := e.other
				if p != path {
					key = e.key
				}
				if code, body := e.call(m, p, key); code != 404 || body["code"] != "not_found" {
					t.Errorf("%s %s: %d %v", m, p, code, body)
				}
			}
		}

		e.startJobs()
		rep := e.waitReport(id)
		if rep["status"] != "completed" || rep["errors"] != nil {
			t.Fatalf("report %v", rep)
		}
		r := rep["report"].(map[string]any)
		src := r["source"].(map[string]any)
		if src["namespace"] != "default" || src["email_id"] != id || src["received_timestamp"] == nil {
			t.Errorf("source %v", src)
		}
		for s, want := range map[string]string{"spf": "pass", "dkim": "pass", "dmarc": "pass", "blocklists": "pass", "content": "pass", "dns": "pass", "spamassassin": "warning"} {
			if got := r[s].(map[string]any)["status"]; got != want {
				t.Errorf("%s: %v, want %s: %v", s, got, want, r[s])
			}
		}
		if r["overall_status"] != "warning" {
			t.Errorf("overall_status %v", r["overall_status"])
		}

		// Refresh: a completed report starts a new run.
		if code, body := e.call("POST", path, e.key); code != 202 || body["status"] != "pending" {
			t.Fatalf("refresh: %d %v", code, body)
		}
		if rep := e.waitReport(id); rep["status"] != "completed" {
			t.Fatalf("refreshed report %v", rep)
		}
	})
}

// TestReportRawNotCaptured: no raw source, no report (409).
func TestReportRawNotCaptured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, false)
		ns, _ := e.svc.Tenants.NamespaceByName(context.Background(), "default")
		off := false
		if _, err := e.svc.Tenants.UpsertNamespace(context.Background(), ns.OrgID, "noraw", tenant.Settings{CaptureRawEmail: &off}); err != nil {
			t.Fatal(err)
		}
		id := e.deliver("noraw", e.signed(orderMail))
		if code, body := e.call("POST", "/api/emails/"+id+"/deliverability-report", e.key); code != 409 || body["code"] != "raw_not_captured" {
			t.Fatalf("POST: %d %v", code, body)
		}
	})
}

// TestReportExpiryAndAbandonedRuns: a report is gone after 7 days, and the
// periodic prune fails a run whose job never finished, which a new request
// then starts again.
func TestReportExpiryAndAbandonedRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, false)
		d := e.svc.Deliverability
		ns, _ := e.svc.Tenants.NamespaceByName(context.Background(), "default")
		long := 30 * 24 * 3600
		if _, err := e.svc.Tenants.UpsertNamespace(context.Background(), ns.OrgID, "default", tenant.Settings{RetentionTime: &long}); err != nil {
			t.Fatal(err)
		}
		id := e.deliver("default", e.signed(orderMail))
		path := "/api/emails/" + id + "/deliverability-report"
		if code, _ := e.call("POST", path, e.key); code != 202 {
			t.Fatal(code)
		}
		d.Now = func() time.Time { return time.Now().Add(11 * time.Minute) }
		if err := d.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		code, body := e.call("GET", path, e.key)
		errs, _ := body["errors"].([]any)
		if code != 200 || body["status"] != "failed" || len(errs) != 1 || errs[0].(map[string]any)["code"] != "report_abandoned" {
			t.Fatalf("abandoned run: %d %v", code, body)
		}
		if code, body := e.call("POST", path, e.key); code != 202 || body["status"] != "pending" {
			t.Fatalf("POST after a failed run: %d %v", code, body)
		}
		d.Now = time.Now
		e.startJobs()
		rep := e.waitReport(id)
		exp, err := time.Parse(time.RFC3339, rep["expires_at"].(string))
		if err != nil || exp.Before(time.Now().Add(7*24*time.Hour-time.Hour)) || exp.After(time.Now().Add(7*24*time.Hour+time.Hour)) {
			t.Fatalf("expires_at %v", rep["expires_at"])
		}
		d.Now = func() time.Time { return exp.Add(time.Second) }
		if code, _ := e.call("GET", path, e.key); code != 404 {
			t.Fatalf("GET past expires_at: %d", code)
		}
		if err := d.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		var n int
		db.QueryRow(context.Background(), "SELECT COUNT(*) FROM deliverability_reports").Scan(&n)
		if n != 0 {
			t.Errorf("%d reports left after the prune", n)
		}
	})
}

// TestReportOverSMTP sends a message over real SMTP from 127.0.0.1: the
// report reads the client IP, HELO and envelope sender the session recorded.
func TestReportOverSMTP(t *testing.T) {
	e := newAPIEnv(t, storetest.Open(t, store.SQLite), false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.svc.SMTP.Serve(l)
	t.Cleanup(func() { e.svc.SMTP.Shutdown(context.Background()) })
	if err := smtp.SendMail(l.Addr().String(), nil, "bounce@shop.test", []string{"mary@default.localhost"}, e.signed(orderMail)); err != nil {
		t.Fatal(err)
	}
	e.startJobs()
	code, latest := e.call("GET", "/api/emails/default/latest", e.key)
	if code != 200 {
		t.Fatal(code, latest)
	}
	id := latest["data"].(map[string]any)["id"].(string)
	if code, _ := e.call("POST", "/api/emails/"+id+"/deliverability-report", e.key); code != 202 {
		t.Fatal(code)
	}
	r := e.waitReport(id)["report"].(map[string]any)
	spf := r["spf"].(map[string]any)
	if spf["result"] != "pass" || spf["client_ip"] != "127.0.0.1" || spf["domain"] != "shop.test" {
		t.Errorf("spf %v", spf)
	}
	dnsSec := r["dns"].(map[string]any)
	if dnsSec["helo"] != "localhost" || dnsSec["fcrdns"] != true {
		t.Errorf("dns %v", dnsSec)
	}
}

// TestSpamScore: with spamd configured, a received email gets its
// spam_score after the 250, from a job enqueued in the ingest transaction.
func TestSpamScore(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db, true)
		gtube := e.deliver("default", []byte(strings.ReplaceAll(`From: tester@shop.test
To: mary@default.localhost
Subject: GTUBE
Message-ID: <g@shop.test>
Date: Wed, 25 Nov 2026 09:00:00 +0000

XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X
`, "\n", "\r\n")))
		// Dated now: SpamAssassin scores a Date hours before its receipt.
		fresh := strings.Replace(orderMail, "Wed, 25 Nov 2026 09:00:00 +0000", time.Now().UTC().Format(time.RFC1123Z), 1)
		plain := e.deliver("default", e.signed(fresh))
		if _, body := e.call("GET", "/api/emails/"+gtube, e.key); body["data"].(map[string]any)["spam_score"] != nil {
			t.Fatal("spam_score before the job ran")
		}
		e.startJobs()
		score := func(id string) float64 {
			return testkit.AwaitWithin(t, 2*time.Minute, "a spam_score of email "+id, func() (float64, bool) {
				_, body := e.call("GET", "/api/emails/"+id, e.key)
				s, ok := body["data"].(map[string]any)["spam_score"].(float64)
				return s, ok
			})
		}
		if s := score(gtube); s < 1000 {
			t.Errorf("GTUBE spam_score %v", s)
		}
		if s := score(plain); s >= 5 {
			t.Errorf("plain spam_score %v", s)
		}
		// The score is in the stored email: searches return it too.
		_, res := e.call("GET", "/api/emails/default/inbox?subject_includes=GTUBE", e.key)
		if d := res["data"].([]any); len(d) != 1 || d[0].(map[string]any)["spam_score"] == nil {
			t.Errorf("search result %v", res)
		}
	})
}

// TestNoSpamScoreWithoutSpamd: without spamd, ingest enqueues nothing and
// spam_score is left out.
func TestNoSpamScoreWithoutSpamd(t *testing.T) {
	e := newAPIEnv(t, storetest.Open(t, store.SQLite), false)
	id := e.deliver("default", e.signed(orderMail))
	counts, err := e.svc.Jobs.Counts(context.Background())
	if err != nil || len(counts) != 0 {
		t.Errorf("jobs %v %v", counts, err)
	}
	if _, body := e.call("GET", "/api/emails/"+id, e.key); body["data"].(map[string]any)["spam_score"] != nil {
		t.Error("spam_score without spamd")
	}
}

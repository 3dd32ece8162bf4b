package inbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// do sends a request with an optional key and JSON body and decodes the answer.
func (e *env) do(method, key, path, body string, out any) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp
}

type shareResp struct {
	Data struct {
		EncodedEmailID string `json:"encoded_email_id"`
		URL            string `json:"url"`
		ExpiresAt      string `json:"expires_at"`
	} `json:"data"`
}

func TestShareLinks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		week, err := e.tenants.CreateNamespace(ctx, org.ID, "week", tenant.Settings{RetentionTime: ptr(30 * 86400)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().Truncate(time.Second)
		e.clock.Store(start.UnixMilli())
		id := e.deliver(week, msg{from: "a@b.c", to: "x@week.localhost", subject: "shared", extra: attachmentMIME})
		other := e.deliver(week, msg{from: "a@b.c", to: "x@week.localhost", subject: "not shared", extra: attachmentMIME})
		iso := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

		// Default: seven days.
		var s shareResp
		if resp := e.do("POST", e.key, "/api/emails/"+id+"/share", "", &s); resp.StatusCode != 201 {
			t.Fatalf("share: %d", resp.StatusCode)
		}
		if s.Data.ExpiresAt != iso(start.Add(7*24*time.Hour)) || s.Data.URL != e.srv.URL+"/api/share/email/"+s.Data.EncodedEmailID {
			t.Fatalf("share %+v", s.Data)
		}
		if _, err := base64.RawURLEncoding.DecodeString(s.Data.EncodedEmailID); err != nil || strings.ContainsAny(s.Data.EncodedEmailID, "+/=") {
			t.Fatalf("encoded_email_id %q is not URL-safe base64", s.Data.EncodedEmailID)
		}
		tok := s.Data.EncodedEmailID

		// Any organisation's key reads the email and its attachments through it.
		for _, key := range []string{e.key, e.otherKey} {
			var em struct{ Data inbox.Email }
			if resp := e.get(key, "/api/share/email/"+tok, &em); resp.StatusCode != 200 || em.Data.ID != id || em.Data.Subject != "shared" {
				t.Fatalf("GET share: %d %+v", resp.StatusCode, em.Data)
			}
			attID := em.Data.Attachments[0].ID
			var att struct{ Data inbox.Attachment }
			if resp := e.get(key, "/api/share/email/"+tok+"/attachment/"+attID, &att); resp.StatusCode != 200 || att.Data.ID != attID {
				t.Fatalf("GET shared attachment: %d %+v", resp.StatusCode, att.Data)
			}
			if resp, body := fetch(t, att.Data.DownloadURL); resp.StatusCode != 200 || !strings.HasPrefix(string(body), "%PDF") {
				t.Fatalf("shared attachment download: %d", resp.StatusCode)
			}
		}
		// ...but not directly, and not another email's attachment through it.
		if resp := e.get(e.otherKey, "/api/emails/"+id, nil); resp.StatusCode != 404 {
			t.Errorf("other organisation reads the email directly: %d", resp.StatusCode)
		}
		var oe struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+other, &oe)
		var er errResp
		for _, p := range []string{
			"/api/share/email/" + tok + "/attachment/" + oe.Data.Attachments[0].ID,
			"/api/share/email/" + tok + "/attachment/" + tenant.NewID(),
			"/api/share/email/" + tok + "/attachment/not-a-uuid",
		} {
			if resp := e.get(e.otherKey, p, &er); resp.StatusCode != 404 {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
		// No key is 401, as everywhere.
		if resp := e.get("", "/api/share/email/"+tok, &er); resp.StatusCode != 401 || er.Code != "missing_api_key" {
			t.Errorf("no key: %d %+v", resp.StatusCode, er)
		}
		// Another organisation cannot share an email it cannot read.
		if resp := e.do("POST", e.otherKey, "/api/emails/"+id+"/share", "", nil); resp.StatusCode != 404 {
			t.Errorf("other organisation shares: %d, want 404", resp.StatusCode)
		}
		// Every tampered form is 404.
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		for i := range raw {
			b := append([]byte{}, raw...)
			b[i] ^= 0x01
			bad := base64.RawURLEncoding.EncodeToString(b)
			if resp := e.get(e.otherKey, "/api/share/email/"+bad, &er); resp.StatusCode != 404 || er.Code != "share_not_found" {
				t.Fatalf("token with byte %d changed: %d %s, want 404 share_not_found", i, resp.StatusCode, er.Code)
			}
		}
		for _, bad := range []string{"x", tok[:len(tok)-1], tok + "A", strings.Repeat("A", len(tok)), id} {
			if resp := e.get(e.otherKey, "/api/share/email/"+bad, nil); resp.StatusCode != 404 {
				t.Errorf("token %q: %d, want 404", bad, resp.StatusCode)
			}
		}

		// expires_in sets the lifetime; the link then expires.
		if resp := e.do("POST", e.key, "/api/emails/"+id+"/share", `{"expires_in": 60}`, &s); resp.StatusCode != 201 || s.Data.ExpiresAt != iso(start.Add(time.Minute)) {
			t.Fatalf("expires_in 60: %d %+v", resp.StatusCode, s.Data)
		}
		short := s.Data.EncodedEmailID
		e.clock.Store(start.Add(59 * time.Second).UnixMilli())
		if resp := e.get(e.otherKey, "/api/share/email/"+short, nil); resp.StatusCode != 200 {
			t.Errorf("before expiry: %d", resp.StatusCode)
		}
		e.clock.Store(start.Add(60 * time.Second).UnixMilli())
		if resp := e.get(e.otherKey, "/api/share/email/"+short, nil); resp.StatusCode != 404 {
			t.Errorf("at expiry: %d, want 404", resp.StatusCode)
		}
		if resp := e.get(e.otherKey, "/api/share/email/"+tok, nil); resp.StatusCode != 200 {
			t.Errorf("the seven-day link: %d", resp.StatusCode)
		}

		for _, body := range []string{`{"expires_in": 0}`, `{"expires_in": -5}`, `{"expires_in": 1.5}`, `{"expires_in": "60"}`, `{"expires_in": 31536001}`} {
			er = errResp{}
			if resp := e.do("POST", e.key, "/api/emails/"+id+"/share", body, &er); resp.StatusCode != 400 || len(er.Errors) != 1 || er.Errors[0].Field != "expires_in" {
				t.Errorf("%s: %d %+v, want 400 on expires_in", body, resp.StatusCode, er)
			}
		}
		if resp := e.do("POST", e.key, "/api/emails/"+tenant.NewID()+"/share", "", nil); resp.StatusCode != 404 {
			t.Errorf("share of a missing email: %d, want 404", resp.StatusCode)
		}

		// A deleted email ends its links.
		if _, err := inbox.Reap(ctx, db, start.Add(31*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		e.clock.Store(start.Add(2 * time.Minute).UnixMilli())
		if resp := e.get(e.otherKey, "/api/share/email/"+tok, &er); resp.StatusCode != 404 || er.Code != "share_not_found" {
			t.Errorf("deleted email: %d %s, want 404", resp.StatusCode, er.Code)
		}
	})
}

// A share link never outlives its email.
func TestShareLinkCappedAtEmailExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		start := time.Now().Truncate(time.Second)
		e.clock.Store(start.UnixMilli())
		id := e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "day", body: "x"})
		var s shareResp
		e.do("POST", e.key, "/api/emails/"+id+"/share", `{"expires_in": 604800}`, &s)
		want := start.Add(time.Duration(e.ns.RetentionTime) * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		if s.Data.ExpiresAt != want {
			t.Fatalf("expires_at %s, want the email's expiry %s", s.Data.ExpiresAt, want)
		}
		e.clock.Store(start.Add(time.Duration(e.ns.RetentionTime) * time.Second).UnixMilli())
		if resp := e.get(e.otherKey, "/api/share/email/"+s.Data.EncodedEmailID, nil); resp.StatusCode != 404 {
			t.Errorf("after the email expired: %d, want 404", resp.StatusCode)
		}
	})
}

// A namespace shared with a second organisation is readable by its keys through
// every read endpoint, and stops being readable when the share stops.
func TestSharedNamespaceIsReadable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		other, _ := e.tenants.OrgByName(ctx, "other")
		start := time.Now().Truncate(time.Second)
		e.clock.Store(start.UnixMilli())
		id := e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "for both", extra: attachmentMIME})
		var em struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &em)
		attID := em.Data.Attachments[0].ID
		paths := []string{
			"/api/emails/default/inbox", "/api/emails/default/latest", "/api/emails/" + id,
			"/api/emails/" + id + "/attachments", "/api/attachments/" + attID,
			rawSourcePath("default", id, em.Data.ReceivedTimestamp),
		}
		for _, p := range paths {
			if resp := e.get(e.otherKey, p, nil); resp.StatusCode != 404 {
				t.Errorf("before sharing, GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
		if _, err := e.tenants.ShareNamespace(ctx, "default", other.ID); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if resp := e.get(e.otherKey, p, nil); resp.StatusCode != 200 {
				t.Errorf("shared, GET %s: %d, want 200", p, resp.StatusCode)
			}
		}
		var r rawSourceResp
		e.get(e.otherKey, rawSourcePath("default", id, em.Data.ReceivedTimestamp), &r)
		if resp, _ := fetch(t, r.Data.DownloadURL); resp.StatusCode != 200 {
			t.Errorf("shared raw source download: %d", resp.StatusCode)
		}
		if resp := e.do("POST", e.otherKey, "/api/emails/"+id+"/share", "", nil); resp.StatusCode != 201 {
			t.Errorf("the reader shares an email: %d, want 201", resp.StatusCode)
		}
		// Sending as the namespace stays the owner's.
		if resp := e.get(e.otherKey, "/api/smtp/default", nil); resp.StatusCode != 404 {
			t.Errorf("reader GET /api/smtp/default: %d, want 404", resp.StatusCode)
		}
		if _, err := e.tenants.ShareNamespace(ctx, "default", ""); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if resp := e.get(e.otherKey, p, nil); resp.StatusCode != 404 {
				t.Errorf("after the share stopped, GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
	})
}

// SMTPUTF8 addresses (RFC 6531) are stored as sent and found by to_addr_prefix,
// case-insensitively.
func TestInternationalAddressesAreSearchable(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		raw, err := os.ReadFile(filepath.Join(corpusDir, "smtputf8.eml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ingester.Deliver(context.Background(), raw, inbox.Envelope{MailFrom: "jörg@bücher.example"},
			[]inbox.Target{{Namespace: e.ns, Recipients: []string{"Δοκιμή@default.localhost", "用户@default.localhost", "ünïcode@default.localhost"}}}); err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{"δοκιμή", "ΔΟΚΙΜΉ@default", "用户@", "ÜNÏCODE", "ünï"} {
			var r searchResp
			if resp := e.get(e.key, "/api/emails/default/inbox?to_addr_prefix="+url.QueryEscape(prefix), &r); resp.StatusCode != 200 || r.TotalCount != 1 {
				t.Errorf("to_addr_prefix=%s: %d, %d matches, want 1", prefix, resp.StatusCode, r.TotalCount)
			}
		}
		var r searchResp
		e.get(e.key, "/api/emails/default/inbox?from_addr_includes="+url.QueryEscape("bücher"), &r)
		if r.TotalCount != 1 || r.Data[0].From.Address != "jörg@bücher.example" {
			t.Errorf("from_addr_includes=bücher: %+v", r)
		}
		if len(r.Data) == 1 && (len(r.Data[0].Bcc) != 1 || r.Data[0].Bcc[0].Address != "ünïcode@default.localhost") {
			t.Errorf("bcc %+v, want the envelope recipient that no header names", r.Data[0].Bcc)
		}
	})
}

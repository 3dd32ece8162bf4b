package inbox_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

type rawSourceResp struct {
	Data struct {
		DownloadURL string `json:"download_url"`
		ExpiresAt   string `json:"expires_at"`
		Size        int64  `json:"size"`
		ContentType string `json:"content_type"`
	} `json:"data"`
}

func rawSourcePath(ns, id string, ts int64) string {
	return fmt.Sprintf("/api/emails/%s/%s/deliverability-report/raw-source?received_timestamp=%d", ns, id, ts)
}

// fetch GETs an absolute URL without a key and returns the response and body.
func fetch(t *testing.T, link string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestRawSource(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		start := time.Now().Truncate(time.Second)
		e.clock.Store(start.UnixMilli())
		m := msg{from: "a@b.c", to: "x@default.localhost", subject: "raw", extra: attachmentMIME}
		raw := m.raw()
		ids, err := e.ingester.Deliver(context.Background(), raw, inbox.Envelope{}, []inbox.Target{{Namespace: e.ns, Recipients: []string{"x@default.localhost"}}})
		if err != nil {
			t.Fatal(err)
		}
		id := ids[0]
		ts := start.Unix()

		var r rawSourceResp
		if resp := e.get(e.key, rawSourcePath("default", id, ts), &r); resp.StatusCode != 200 {
			t.Fatalf("raw-source: %d", resp.StatusCode)
		}
		wantExp := start.Add(inbox.DownloadLinkTTL).UTC().Format("2006-01-02T15:04:05.000Z")
		if r.Data.Size != int64(len(raw)) || r.Data.ContentType != "message/rfc822" || r.Data.ExpiresAt != wantExp {
			t.Fatalf("raw-source %+v, want size %d, expires_at %s", r.Data, len(raw), wantExp)
		}
		resp, body := fetch(t, r.Data.DownloadURL)
		if resp.StatusCode != 200 || string(body) != string(raw) {
			t.Fatalf("download: %d, %d bytes, want the %d bytes received", resp.StatusCode, len(body), len(raw))
		}
		for h, want := range map[string]string{
			"Content-Type": "message/rfc822", "Content-Disposition": `attachment; filename="` + id + `.eml"`,
			"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
		} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}

		// Parameter and lookup errors.
		var er errResp
		for _, c := range []struct {
			path, code, field string
			status            int
		}{
			{"/api/emails/default/" + id + "/deliverability-report/raw-source", "invalid_parameter", "received_timestamp", 400},
			{"/api/emails/default/" + id + "/deliverability-report/raw-source?received_timestamp=", "invalid_parameter", "received_timestamp", 400},
			{"/api/emails/default/" + id + "/deliverability-report/raw-source?received_timestamp=abc", "invalid_parameter", "received_timestamp", 400},
			{"/api/emails/default/" + id + "/deliverability-report/raw-source?received_timestamp=-1", "invalid_parameter", "received_timestamp", 400},
			{fmt.Sprintf("/api/emails/default/%s/deliverability-report/raw-source?received_timestamp=%d.5", id, ts), "invalid_parameter", "received_timestamp", 400},
			{rawSourcePath("default", id, ts+1), "not_found", "", 404},
			{rawSourcePath("default", id, ts-1), "not_found", "", 404},
			{rawSourcePath("default", tenant.NewID(), ts), "not_found", "", 404},
			{rawSourcePath("default", "not-a-uuid", ts), "not_found", "", 404},
			{rawSourcePath("nosuchns", id, ts), "not_found", "", 404},
		} {
			er = errResp{}
			if resp := e.get(e.key, c.path, &er); resp.StatusCode != c.status || er.Code != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.path, resp.StatusCode, er.Code, c.status, c.code)
				continue
			}
			if c.field != "" && (len(er.Errors) != 1 || er.Errors[0].Field != c.field) {
				t.Errorf("%s: errors %+v, want one for %s", c.path, er.Errors, c.field)
			}
		}
		// The timestamp may be written with a zero fraction.
		if resp := e.get(e.key, fmt.Sprintf("/api/emails/default/%s/deliverability-report/raw-source?received_timestamp=%d.0", id, ts), nil); resp.StatusCode != 200 {
			t.Errorf("received_timestamp=%d.0: %d, want 200", ts, resp.StatusCode)
		}
		// The email must be in the namespace of the path.
		org, _ := e.tenants.OrgByName(context.Background(), "default")
		if _, err := e.tenants.CreateNamespace(context.Background(), org.ID, "second", tenant.Settings{}); err != nil {
			t.Fatal(err)
		}
		if resp := e.get(e.key, rawSourcePath("second", id, ts), nil); resp.StatusCode != 404 {
			t.Errorf("email under another namespace of the same organisation: %d, want 404", resp.StatusCode)
		}
		// Another organisation sees nothing.
		if resp := e.get(e.otherKey, rawSourcePath("default", id, ts), nil); resp.StatusCode != 404 {
			t.Errorf("other organisation: %d, want 404", resp.StatusCode)
		}

		// A tampered link, a link signed for an attachment, and an expired link are 404.
		u, _ := url.Parse(r.Data.DownloadURL)
		q := u.Query()
		var att struct{ Data []inbox.Attachment }
		e.get(e.key, "/api/emails/"+id+"/attachments", &att)
		au, _ := url.Parse(att.Data[0].DownloadURL)
		for name, p := range map[string]string{
			"signature": u.Path + "?" + url.Values{"expires": {q.Get("expires")}, "signature": {"AAAA" + q.Get("signature")[4:]}}.Encode(),
			"expiry":    u.Path + "?" + url.Values{"expires": {q.Get("expires") + "0"}, "signature": {q.Get("signature")}}.Encode(),
			"other id":  strings.Replace(u.Path, id, tenant.NewID(), 1) + "?" + q.Encode(),
			"purpose":   "/download/raw/" + att.Data[0].ID + "?" + au.RawQuery,
			"no query":  u.Path,
		} {
			if resp := e.get("", p, nil); resp.StatusCode != 404 {
				t.Errorf("%s tampered: %d, want 404", name, resp.StatusCode)
			}
		}
		e.clock.Store(start.Add(inbox.DownloadLinkTTL + time.Second).UnixMilli())
		if resp := e.get("", u.Path+"?"+q.Encode(), nil); resp.StatusCode != 404 {
			t.Errorf("expired link: %d, want 404", resp.StatusCode)
		}
	})
}

// A link is never valid past the email's expiry, and the email's deletion ends it.
func TestRawSourceLinkEndsWithEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		short, err := e.tenants.CreateNamespace(ctx, org.ID, "short", tenant.Settings{RetentionTime: ptr(120)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().Truncate(time.Second)
		e.clock.Store(start.UnixMilli())
		id := e.deliver(short, msg{from: "a@b.c", to: "x@short.localhost", subject: "short", body: "x"})
		var r rawSourceResp
		if resp := e.get(e.key, rawSourcePath("short", id, start.Unix()), &r); resp.StatusCode != 200 {
			t.Fatalf("raw-source: %d", resp.StatusCode)
		}
		want := start.Add(120 * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		if r.Data.ExpiresAt != want {
			t.Fatalf("expires_at %s, want the email's expiry %s", r.Data.ExpiresAt, want)
		}
		if resp, _ := fetch(t, r.Data.DownloadURL); resp.StatusCode != 200 {
			t.Fatalf("download: %d", resp.StatusCode)
		}
		if _, err := inbox.Reap(ctx, db, start.Add(121*time.Second)); err != nil {
			t.Fatal(err)
		}
		if resp, _ := fetch(t, r.Data.DownloadURL); resp.StatusCode != 404 {
			t.Errorf("download after the email was deleted: %d, want 404", resp.StatusCode)
		}
	})
}

// With capture_raw_email off the raw source is not kept (409 raw_not_captured)
// while attachments stay downloadable.
func TestRawNotCaptured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		off := false
		ns, err := e.tenants.UpsertNamespace(ctx, org.ID, "noraw", tenant.Settings{CaptureRawEmail: &off})
		if err != nil {
			t.Fatal(err)
		}
		id := e.deliver(ns, msg{from: "a@b.c", to: "x@noraw.localhost", subject: "no raw", extra: attachmentMIME})
		var em struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &em)
		var er errResp
		resp := e.get(e.key, rawSourcePath("noraw", id, em.Data.ReceivedTimestamp), &er)
		if resp.StatusCode != 409 || er.Code != "raw_not_captured" || er.Error != "Conflict" {
			t.Fatalf("raw-source: %d %+v, want 409 raw_not_captured", resp.StatusCode, er)
		}
		// The mismatch check comes first: a wrong timestamp is still 404.
		if resp := e.get(e.key, rawSourcePath("noraw", id, em.Data.ReceivedTimestamp+5), nil); resp.StatusCode != 404 {
			t.Errorf("wrong timestamp: %d, want 404", resp.StatusCode)
		}
		var n int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM raw_messages WHERE email_id = ?", id).Scan(&n)
		if n != 0 {
			t.Error("raw source stored for a namespace that does not capture it")
		}
		var list struct{ Data []inbox.Attachment }
		e.get(e.key, "/api/emails/"+id+"/attachments", &list)
		if len(list.Data) != 1 {
			t.Fatalf("attachments %+v", list.Data)
		}
		if resp, body := fetch(t, list.Data[0].DownloadURL); resp.StatusCode != 200 || string(body) != "%PDF-1.4\n%\xc7\xec\x8f\xa2\n" {
			t.Errorf("attachment download: %d %q", resp.StatusCode, body)
		}
		if _, err := e.api.Searcher.RawMessage(ctx, id); err != inbox.ErrRawNotCaptured {
			t.Errorf("RawMessage = %v, want ErrRawNotCaptured", err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

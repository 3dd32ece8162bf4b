package tenant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

type env struct {
	t        *testing.T
	svc      *tenant.Service
	srv      *httptest.Server
	key      string
	otherKey string
}

// newEnv is the running service (as catchbox serve builds it) over db, which
// also checks Bootstrap: the build created the first organisation, and a second
// call creates nothing.
func newEnv(t *testing.T, db *store.DB) *env {
	ctx := context.Background()
	cfg := servertest.Config(t)
	cfg.RetentionMax = 7 * 24 * time.Hour
	cfg.SMTPPublicHost = "mail.test"
	cfg.IMAPAddr, cfg.POP3Addr = "127.0.0.1:1143", "" // not listened on: the ports GET /api/smtp/{namespace} names
	built := servertest.New(t, db, cfg)
	svc, key := built.Tenants, built.NewKey
	if !strings.HasPrefix(key, tenant.KeyPrefix) {
		t.Fatalf("Bootstrap = %q; want a new key", key)
	}
	if again, err := svc.Bootstrap(ctx, "ignored-key"); err != nil || again != "" {
		t.Fatalf("second Bootstrap = %q, %v; want no new key", again, err)
	}
	other, err := svc.CreateOrg(ctx, "other", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, err := svc.CreateKey(ctx, other.ID, "ci", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Serve(t, built)
	return &env{t: t, svc: svc, srv: srv, key: key, otherKey: otherKey}
}

func (e *env) do(method, key, path, body string, out any) int {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %s: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

type nsResp struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Shared    *bool  `json:"shared"`
	Settings  struct {
		RetentionTime   int  `json:"retention_time"`
		QuotaLimit      *int `json:"quota_limit"`
		CaptureRawEmail bool `json:"capture_raw_email"`
	} `json:"settings"`
}

func TestKeyCheckAndRevocation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var ok map[string]bool
		if code := e.do("GET", e.key, "/api/test", "", &ok); code != 200 || !ok["success"] {
			t.Fatalf("GET /api/test = %d %v", code, ok)
		}
		ctx := context.Background()
		org, _ := e.svc.OrgByName(ctx, "default")
		id, key, err := e.svc.CreateKey(ctx, org.ID, "temp", "")
		if err != nil {
			t.Fatal(err)
		}
		if code := e.do("GET", key, "/api/test", "", nil); code != 200 {
			t.Fatalf("new key: %d", code)
		}
		keys, err := e.svc.ListKeys(ctx, org.ID, true) // newest first
		if err != nil || len(keys) != 2 || keys[0].ID != id || keys[0].Label != "temp" || keys[0].LastUsed == nil || keys[0].RevokedAt != nil {
			t.Fatalf("ListKeys = %+v, %v; want the new key, used", keys, err)
		}
		if err := e.svc.RevokeKey(ctx, id); err != nil {
			t.Fatal(err)
		}
		if code := e.do("GET", key, "/api/test", "", nil); code != 401 {
			t.Fatalf("revoked key: %d, want 401", code)
		}
		if err := e.svc.RevokeKey(ctx, id); !errors.Is(err, tenant.ErrAlreadyRevoked) {
			t.Fatalf("second revoke: %v, want ErrAlreadyRevoked", err)
		}
		if err := e.svc.RevokeKey(ctx, tenant.NewID()); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("revoke of an unknown id: %v, want ErrNotFound", err)
		}
		if keys, _ := e.svc.ListKeys(ctx, org.ID, true); keys[0].RevokedAt == nil {
			t.Fatalf("revoked key listed as valid: %+v", keys[0])
		}
		var n int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM api_keys WHERE key_hash = ?", key).Scan(&n)
		if n != 0 {
			t.Fatal("an API key is stored in clear")
		}
	})
}

func TestNamespaceSettings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var ns nsResp
		if code := e.do("POST", e.key, "/api/namespace/My-Inbox/settings", "", &ns); code != 201 {
			t.Fatalf("create with empty body: %d", code)
		}
		if ns.Namespace != "my-inbox" || ns.Settings.RetentionTime != 86400 || ns.Settings.QuotaLimit != nil || !ns.Settings.CaptureRawEmail || ns.Shared == nil || *ns.Shared {
			t.Fatalf("created %+v", ns)
		}
		id := ns.ID
		if code := e.do("POST", e.key, "/api/namespace/my-inbox/settings", `{"retention_time": 3600, "quota_limit": 50, "capture_raw_email": false, "unknown": 1}`, &ns); code != 201 {
			t.Fatalf("update: %d", code)
		}
		if ns.ID != id || ns.Settings.RetentionTime != 3600 || ns.Settings.QuotaLimit == nil || *ns.Settings.QuotaLimit != 50 || ns.Settings.CaptureRawEmail {
			t.Fatalf("updated %+v", ns)
		}
		// Fields left out stay; null quota returns to the default.
		e.do("POST", e.key, "/api/namespace/my-inbox/settings", `{"quota_limit": null}`, &ns)
		if ns.Settings.RetentionTime != 3600 || ns.Settings.QuotaLimit != nil || ns.Settings.CaptureRawEmail {
			t.Fatalf("partial update %+v", ns)
		}
		var errBody struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Field string `json:"field"`
			} `json:"errors"`
		}
		for _, c := range []struct {
			path, body, code, field string
			status                  int
		}{
			{"/api/namespace/my-inbox/settings", `{"retention_time": 59}`, "invalid_parameter", "retention_time", 400},
			{"/api/namespace/my-inbox/settings", `{"retention_time": 604801}`, "invalid_parameter", "retention_time", 400},
			{"/api/namespace/my-inbox/settings", `{"retention_time": "long"}`, "invalid_parameter", "retention_time", 400},
			{"/api/namespace/my-inbox/settings", `{"quota_limit": 0}`, "invalid_parameter", "quota_limit", 400},
			{"/api/namespace/my-inbox/settings", `{"capture_raw_email": "yes"}`, "invalid_parameter", "capture_raw_email", 400},
			{"/api/namespace/my-inbox/settings", `{not json`, "invalid_json", "", 400},
			{"/api/namespace/-bad-/settings", `{}`, "invalid_namespace", "namespace", 400},
			{"/api/namespace/" + strings.Repeat("a", 64) + "/settings", `{}`, "invalid_namespace", "namespace", 400},
			{"/api/namespace/under_score/settings", `{}`, "invalid_namespace", "namespace", 400},
			{"/api/namespace/outbound/settings", `{}`, "namespace_reserved", "namespace", 400},
			{"/api/namespace/Share/settings", `{}`, "namespace_reserved", "namespace", 400},
		} {
			errBody.Code, errBody.Errors = "", nil
			code := e.do("POST", e.key, c.path, c.body, &errBody)
			if code != c.status || errBody.Code != c.code {
				t.Errorf("%s %s: %d %s, want %d %s", c.path, c.body, code, errBody.Code, c.status, c.code)
			}
			if c.field != "" && (len(errBody.Errors) != 1 || errBody.Errors[0].Field != c.field) {
				t.Errorf("%s %s: errors %+v, want field %s", c.path, c.body, errBody.Errors, c.field)
			}
		}
		// An integer field says so, whatever the wrong value.
		for body, want := range map[string]string{
			`{"retention_time": 3600.5}`:               "retention_time must be an integer",
			`{"retention_time": "an hour"}`:            "retention_time must be an integer",
			`{"retention_time": 1e30}`:                 "retention_time is out of range",
			`{"retention_time": 99999999999999999999}`: "retention_time is out of range",
			`{"capture_raw_email": 1}`:                 "capture_raw_email must be a boolean",
		} {
			if code := e.do("POST", e.key, "/api/namespace/my-inbox/settings", body, &errBody); code != 400 || errBody.Message != want {
				t.Errorf("%s: %d %q, want 400 %q", body, code, errBody.Message, want)
			}
		}
		// A whole number may be written with a fraction or an exponent: JSON
		// has one number type.
		var got nsResp
		if code := e.do("POST", e.key, "/api/namespace/my-inbox/settings", `{"retention_time": 3600.0, "quota_limit": 2.5e2}`, &got); code != 201 ||
			got.Settings.RetentionTime != 3600 || got.Settings.QuotaLimit == nil || *got.Settings.QuotaLimit != 250 {
			t.Errorf("3600.0 and 2.5e2: %d %+v", code, got.Settings)
		}
		// The message names the namespace once, then the rule.
		e.do("POST", e.key, "/api/namespace/-bad-/settings", `{}`, &errBody)
		if want := `namespace "-bad-" is not valid: namespace names are 1 to 63 characters of a-z, 0-9 and '-', not starting or ending with '-'`; errBody.Message != want {
			t.Errorf("invalid_namespace message %q, want %q", errBody.Message, want)
		}
		// Another organisation cannot take or change the name.
		if code := e.do("POST", e.otherKey, "/api/namespace/my-inbox/settings", `{}`, &errBody); code != 409 || errBody.Code != "namespace_taken" {
			t.Fatalf("other organisation: %d %s, want 409 namespace_taken", code, errBody.Code)
		}
		var list struct {
			TotalCount int      `json:"total_count"`
			Data       []nsResp `json:"data"`
		}
		e.do("GET", e.key, "/api/namespaces", "", &list)
		if list.TotalCount != 2 || len(list.Data) != 2 || list.Data[0].Namespace != "default" || list.Data[1].Namespace != "my-inbox" {
			t.Fatalf("list %+v", list)
		}
		e.do("GET", e.otherKey, "/api/namespaces", "", &list)
		if list.TotalCount != 0 || list.Data == nil {
			t.Fatalf("other organisation's list %+v", list)
		}
	})
}

func TestSMTPSettings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var s struct {
			Data struct {
				Host     string `json:"host"`
				Port     int    `json:"port"`
				Username string `json:"username"`
				Password string `json:"password"`
				IMAPPort *int   `json:"imap_port"`
				POP3Port *int   `json:"pop3_port"`
			} `json:"data"`
		}
		if code := e.do("GET", e.key, "/api/smtp/default", "", &s); code != 200 {
			t.Fatalf("status %d", code)
		}
		ns, _ := e.svc.NamespaceByName(context.Background(), "default")
		if s.Data.Host != "mail.test" || s.Data.Port != 2525 || s.Data.Username != "default" || s.Data.Password != e.svc.SMTPPassword(ns) || len(s.Data.Password) < 20 {
			t.Fatalf("settings %+v", s.Data)
		}
		// The IMAP listener's port; none for POP3, which is off.
		if s.Data.IMAPPort == nil || *s.Data.IMAPPort != 1143 || s.Data.POP3Port != nil {
			t.Fatalf("imap_port %v, pop3_port %v", s.Data.IMAPPort, s.Data.POP3Port)
		}
		if code := e.do("GET", e.otherKey, "/api/smtp/default", "", nil); code != 404 {
			t.Fatalf("other organisation: %d, want 404", code)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		big := `{"retention_time": 3600, "pad": "` + string(bytes.Repeat([]byte("a"), httpx.MaxBodyBytes)) + `"}`
		var errBody struct{ Code string }
		if code := e.do("POST", e.key, "/api/namespace/big/settings", big, &errBody); code != 413 || errBody.Code != "body_too_large" {
			t.Fatalf("oversized body: %d %s", code, errBody.Code)
		}
	})
}

func TestShareNamespace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		owner, _ := e.svc.OrgByName(ctx, "default")
		other, _ := e.svc.OrgByName(ctx, "other")
		type listed struct {
			Namespace            string `json:"namespace"`
			Shared               bool   `json:"shared"`
			SharedOrganisationID string `json:"shared_organisation_id"`
		}
		list := func(key string) map[string]listed {
			var body struct {
				TotalCount int      `json:"total_count"`
				Data       []listed `json:"data"`
			}
			if code := e.do("GET", key, "/api/namespaces", "", &body); code != 200 || body.TotalCount != len(body.Data) {
				t.Fatalf("list: %d %+v", code, body)
			}
			m := map[string]listed{}
			for _, n := range body.Data {
				m[n.Namespace] = n
			}
			return m
		}
		if _, err := e.svc.ShareNamespace(ctx, "default", owner.ID); !errors.Is(err, tenant.ErrShareWithOwner) {
			t.Fatalf("share with the owner: %v", err)
		}
		if _, err := e.svc.ShareNamespace(ctx, "nosuch", other.ID); !errors.Is(err, tenant.ErrNotFound) {
			t.Fatalf("share a missing namespace: %v", err)
		}
		n, err := e.svc.ShareNamespace(ctx, "DEFAULT", other.ID)
		if err != nil || n.SharedOrgID != other.ID {
			t.Fatalf("ShareNamespace = %+v, %v", n, err)
		}
		// Each side sees the namespace as shared, naming the other organisation.
		if got := list(e.key)["default"]; !got.Shared || got.SharedOrganisationID != other.ID {
			t.Errorf("owner sees %+v", got)
		}
		if got := list(e.otherKey)["default"]; !got.Shared || got.SharedOrganisationID != owner.ID {
			t.Errorf("reader sees %+v", got)
		}
		// The reader may not change settings nor get SMTP credentials.
		var errBody struct{ Code string }
		if code := e.do("POST", e.otherKey, "/api/namespace/default/settings", `{"retention_time": 3600}`, &errBody); code != 409 || errBody.Code != "namespace_taken" {
			t.Errorf("reader changing settings: %d %s", code, errBody.Code)
		}
		if code := e.do("GET", e.otherKey, "/api/smtp/default", "", nil); code != 404 {
			t.Errorf("reader asking for SMTP credentials: %d, want 404", code)
		}
		if ns, _ := e.svc.NamespaceByName(ctx, "default"); ns.RetentionTime != tenant.DefaultRetention || !ns.VisibleTo(other.ID) {
			t.Errorf("namespace after the reader's attempts: %+v", ns)
		}
		// The owner's settings response also shows the share.
		var upd struct {
			Shared bool `json:"shared"`
		}
		if code := e.do("POST", e.key, "/api/namespace/default/settings", `{}`, &upd); code != 201 || !upd.Shared {
			t.Errorf("owner update: %d %+v", code, upd)
		}
		// Stopping the share hides it again.
		if _, err := e.svc.ShareNamespace(ctx, "default", ""); err != nil {
			t.Fatal(err)
		}
		if _, ok := list(e.otherKey)["default"]; ok {
			t.Error("the reader still lists the namespace after the share stopped")
		}
		if got := list(e.key)["default"]; got.Shared || got.SharedOrganisationID != "" {
			t.Errorf("owner sees %+v after the share stopped", got)
		}
		if ns, _ := e.svc.NamespaceByName(ctx, "default"); ns.VisibleTo(other.ID) {
			t.Error("namespace still visible to the former reader")
		}
	})
}

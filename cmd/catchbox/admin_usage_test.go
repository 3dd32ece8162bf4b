package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/store"
)

// TestAdminOrgUsage counts outbound emails created through the store in
// three months: only those with an external recipient count, each in its own
// month and organisation.
func TestAdminOrgUsage(t *testing.T) {
	a := &adminCmd{Store: config.Store{DataDir: t.TempDir()}, RetentionMax: 720 * time.Hour, Create: true}
	for _, name := range []string{"acme", "globex"} {
		if _, err := captureStdout(t, func() error { return (&orgCreateCmd{Name: name, TOTPEnabled: true}).Run(a) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	db, err := server.OpenStore(ctx, a.Store)
	if err != nil {
		t.Fatal(err)
	}
	env, done, err := a.open()
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := env.tenants.OrgByName(ctx, "acme")
	globex, _ := env.tenants.OrgByName(ctx, "globex")
	done()
	s := outstore.NewStore(db, 0, nil)
	create := func(org string, at time.Time, external bool) {
		t.Helper()
		s.Now = func() time.Time { return at }
		id := outstore.NewID()
		err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := s.Create(ctx, tx, outstore.NewEmail{ID: id, OrgID: org, NamespaceID: "ns", Type: outstore.TypeNew,
				From: outstore.Address{Email: "a@ns.localhost"}, Subject: "s", MessageID: "<" + id + "@localhost>",
				Source: []byte("Subject: s\r\n\r\nx\r\n"), Recipients: []outstore.NewRecipient{
					{Type: outstore.To, Email: "b@ns.localhost", Internal: true},
					{Type: outstore.Bcc, Email: "partner@example.com", Internal: !external}}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	may := time.Date(2025, 5, 31, 23, 59, 59, 0, time.UTC)
	create(acme.ID, may, true)
	create(acme.ID, may, false)
	create(acme.ID, may.Add(time.Second), true) // June
	create(acme.ID, may.Add(2*time.Second), true)
	create(globex.ID, may, true)
	create(acme.ID, time.Now(), true)
	db.Close()

	for _, c := range []struct {
		month string
		want  string
	}{
		{"2025-05", "Organisation acme sent 1 outbound message in 2025-05 (messages with an external recipient)\n"},
		{"2025-06", "Organisation acme sent 2 outbound messages in 2025-06 (messages with an external recipient)\n"},
		{"2025-07", "Organisation acme sent 0 outbound messages in 2025-07 (messages with an external recipient)\n"},
		{"", "Organisation acme sent 1 outbound message in " + time.Now().UTC().Format("2006-01") + " (messages with an external recipient)\n"},
	} {
		out, err := captureStdout(t, func() error { return (&orgUsageCmd{Name: "acme", Month: c.month}).Run(a) })
		if err != nil || out != c.want {
			t.Errorf("usage %q: %q (%v), want %q", c.month, out, err, c.want)
		}
	}

	a.JSON = true
	out, err := captureStdout(t, func() error { return (&orgUsageCmd{Name: "globex", Month: "2025-05"}).Run(a) })
	var got map[string]any
	if err != nil || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("--json: %q (%v)", out, err)
	}
	want := map[string]any{"organisation_id": globex.ID, "organisation": "globex", "month": "2025-05", "outbound_messages": float64(1)}
	if len(got) != len(want) {
		t.Errorf("--json %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--json %s = %v, want %v", k, got[k], v)
		}
	}

	for _, c := range []orgUsageCmd{{Name: "acme", Month: "2025-13"}, {Name: "acme", Month: "May"}, {Name: "nosuch"}} {
		if _, err := captureStdout(t, func() error { return c.Run(a) }); err == nil {
			t.Errorf("usage %+v succeeded", c)
		} else if c.Name == "acme" && !strings.Contains(err.Error(), "YYYY-MM") {
			t.Errorf("usage %+v: %v", c, err)
		}
	}
}

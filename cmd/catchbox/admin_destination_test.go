package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
)

// TestAdminDestination adds, lists and removes destinations in plain text
// and JSON: an operator's destination is verified at once; each
// organisation sees its own; removing one that is not there fails.
func TestAdminDestination(t *testing.T) {
	a := &adminCmd{Store: config.Store{DataDir: t.TempDir()}, RetentionMax: 720 * time.Hour, Create: true}
	for _, name := range []string{"acme", "globex"} {
		if _, err := captureStdout(t, func() error { return (&orgCreateCmd{Name: name, TOTPEnabled: true}).Run(a) }); err != nil {
			t.Fatal(err)
		}
	}
	out, err := captureStdout(t, func() error { return (&destinationAddCmd{Email: "Partner@Example.com", Org: "acme"}).Run(a) })
	if err != nil || !strings.HasPrefix(out, "Added destination partner@example.com (id ") || !strings.HasSuffix(out, ") for organisation acme\n") {
		t.Fatalf("add: %q %v", out, err)
	}
	if _, err := captureStdout(t, func() error { return (&destinationAddCmd{Email: "Jane <jane@example.com>", Org: "acme"}).Run(a) }); err == nil {
		t.Error("a display name was accepted")
	}
	out, err = captureStdout(t, func() error { return (&destinationListCmd{Org: "acme"}).Run(a) })
	if err != nil || !strings.Contains(out, "\tpartner@example.com\tverified ") || strings.Count(out, "\n") != 1 {
		t.Errorf("list: %q %v", out, err)
	}
	out, err = captureStdout(t, func() error { return (&destinationListCmd{Org: "globex"}).Run(a) })
	if err != nil || out != "Organisation globex has no destinations\n" {
		t.Errorf("list globex: %q %v", out, err)
	}
	if _, err := captureStdout(t, func() error { return (&destinationRemoveCmd{Email: "partner@example.com", Org: "globex"}).Run(a) }); err == nil {
		t.Error("removed another organisation's destination")
	}

	a.JSON = true
	out, err = captureStdout(t, func() error { return (&destinationListCmd{Org: "acme"}).Run(a) })
	var list struct {
		Data []struct {
			ID, Email, Status string
		} `json:"data"`
	}
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Data) != 1 || list.Data[0].Email != "partner@example.com" ||
		list.Data[0].Status != "verified" {
		t.Errorf("list --json: %q %v", out, err)
	}
	out, err = captureStdout(t, func() error { return (&destinationRemoveCmd{Email: "PARTNER@example.com", Org: "acme"}).Run(a) })
	if err != nil || out != `{"email":"partner@example.com","removed":true}`+"\n" {
		t.Errorf("remove --json: %q %v", out, err)
	}
	a.JSON = false
	out, err = captureStdout(t, func() error { return (&destinationListCmd{Org: "acme"}).Run(a) })
	if err != nil || out != "Organisation acme has no destinations\n" {
		t.Errorf("list after remove: %q %v", out, err)
	}
}

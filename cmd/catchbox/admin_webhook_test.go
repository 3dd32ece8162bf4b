package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdminWebhook: add prints the endpoint and its secret once, list shows
// it without the secret, a bad event type is refused naming it, remove
// deletes it.
func TestAdminWebhook(t *testing.T) {
	dir := t.TempDir()
	admin(t, dir, false, "--create", "org", "create", "acme")
	var ep struct {
		ID         string   `json:"id"`
		URL        string   `json:"url"`
		EventTypes []string `json:"event_types"`
		Secret     string   `json:"secret"`
	}
	out := admin(t, dir, false, "--json", "webhook", "add", "https://hooks.example.com/catchbox", "--org", "acme",
		"--events", "email.received,sms.received")
	if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.ID == "" || !strings.HasPrefix(ep.Secret, "whsec_") ||
		len(ep.EventTypes) != 2 || ep.URL != "https://hooks.example.com/catchbox" {
		t.Fatalf("webhook add --json = %q (%v)", out, err)
	}
	out = admin(t, dir, false, "webhook", "list", "--org", "acme")
	if !strings.Contains(out, ep.ID) || !strings.Contains(out, "email.received,sms.received") || strings.Contains(out, "whsec_") {
		t.Errorf("webhook list = %q", out)
	}
	if out := admin(t, dir, false, "webhook", "list"); !strings.Contains(out, ep.ID) {
		t.Errorf("webhook list of every organisation = %q", out)
	}
	errOut := admin(t, dir, true, "webhook", "add", "https://hooks.example.com/", "--org", "acme", "--events", "email.sent")
	if !strings.Contains(errOut, "event_types") || !strings.Contains(errOut, "email.sent") {
		t.Errorf("bad event type: %q", errOut)
	}
	admin(t, dir, false, "webhook", "remove", ep.ID)
	if out := admin(t, dir, false, "webhook", "list", "--org", "acme"); strings.Contains(out, ep.ID) {
		t.Errorf("after remove: %q", out)
	}
	admin(t, dir, true, "webhook", "remove", ep.ID)
}

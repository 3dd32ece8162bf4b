package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/totp"
)

// extraIsolationCases are the pages beyond the inbox's that name a resource
// of organisation default's: an API key, a device, an SMS number, an
// outbound email, and the forms on an email.
func extraIsolationCases(t *testing.T, e *env) []isolationCase {
	t.Helper()
	ctx := context.Background()
	keyID, _, err := e.svc.Tenants.CreateKey(ctx, e.org.ID, "alices-key", "")
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := totp.DecodeSecret("JBSWY3DPEHPK3PXP")
	dev, err := e.svc.TOTP.Create(ctx, e.org.ID, totp.NewDevice{Secret: secret, Name: "Secret of default", Params: totp.DefaultParams})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SMS.Service.AddNumber(ctx, e.org.ID, sms.NumberSpec{Phone: "+15550009999", Status: sms.StatusActive}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.base+"/api/emails/send?namespace=default",
		strings.NewReader(`{"from":{"email":"a@default.localhost"},"to":["b@default.localhost"],"subject":"Secret of default","text":"the secret body"}`))
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sent struct{ ID string }
	if err := json.Unmarshal(body, &sent); err != nil || sent.ID == "" {
		t.Fatalf("send: %d %s", resp.StatusCode, body)
	}
	id := e.deliver("default", mail("Secret of default", "the secret body"))
	return []isolationCase{
		{"POST", "/organisation/keys/" + keyID + "/revoke", nil},
		{"POST", "/authenticators/" + dev.ID + "/delete", nil},
		{"GET", "/sms/+15550009999", nil},
		{"POST", "/sms/+15550009999/virtual", url.Values{"from_number": {"+15550001111"}, "body": {"x"}}},
		{"GET", "/outbound/" + sent.ID, nil},
		{"GET", "/emails/" + id + "?tab=report", nil},
		{"POST", "/emails/" + id + "/report", nil},
		{"POST", "/emails/" + id + "/reply", url.Values{"from": {"x@elsewhere.localhost"}, "text": {"x"}}},
		{"POST", "/emails/" + id + "/forward", url.Values{"from": {"x@elsewhere.localhost"}, "to": {"y@elsewhere.localhost"}}},
	}
}

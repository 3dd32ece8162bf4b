package sms_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// sign computes X-Twilio-Signature from the documented algorithm, written out
// here independently of the server's code: the full URL, then each POST
// parameter's name and value sorted by name, HMAC-SHA1 under the auth token,
// Base64.
func sign(token, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := fullURL
	for _, k := range keys {
		for _, v := range form[k] {
			s += k + v
		}
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestTwilioSignatureVector checks the implementation against the published
// example of Twilio's helper libraries (auth token 12345).
func TestTwilioSignatureVector(t *testing.T) {
	form := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {"1234"},
		"From": {"+14158675309"}, "To": {"+18005551212"}}
	const u = "https://mycompany.com/myapp.php?foo=1&bar=2"
	const want = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	if got := sms.TwilioSignature("12345", u, form); got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	if got := sign("12345", u, form); got != want {
		t.Fatalf("the test's own signer gives %s, want %s", got, want)
	}
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{u, true},
		{"https://mycompany.com:443/myapp.php?foo=1&bar=2", true}, // Twilio signed without the standard port
		{"https://mycompany.com/myapp.php?foo=1&bar=3", false},
		{"http://mycompany.com/myapp.php?foo=1&bar=2", false},
		{"https://mycompany.com:8443/myapp.php?foo=1&bar=2", false},
	} {
		if got := sms.ValidTwilioSignature("12345", want, c.url, form); got != c.ok {
			t.Errorf("%s: valid %v, want %v", c.url, got, c.ok)
		}
	}
	// And the reverse: signed with the port, requested without it.
	withPort := sign("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", form)
	if !sms.ValidTwilioSignature("12345", withPort, u, form) {
		t.Error("a signature over the URL with :443 is not accepted")
	}
	if sms.ValidTwilioSignature("12346", want, u, form) || sms.ValidTwilioSignature("", want, u, form) || sms.ValidTwilioSignature("12345", "", u, form) {
		t.Error("a wrong token or an empty signature is accepted")
	}
	tampered := url.Values{}
	for k, v := range form {
		tampered[k] = v
	}
	tampered.Set("Digits", "1235")
	if sms.ValidTwilioSignature("12345", want, u, tampered) {
		t.Error("a changed parameter is accepted")
	}
}

// inbound is a Twilio inbound-message webhook's form.
func inbound(sid, from, to, body string) url.Values {
	return url.Values{
		"ToCountry": {"US"}, "ToState": {"CA"}, "SmsMessageSid": {sid}, "NumMedia": {"0"}, "ToCity": {""},
		"FromZip": {""}, "SmsSid": {sid}, "FromState": {""}, "SmsStatus": {"received"}, "FromCity": {"SAN FRANCISCO"},
		"Body": {body}, "FromCountry": {"US"}, "To": {to}, "ToZip": {""}, "NumSegments": {"1"}, "MessageSid": {sid},
		"AccountSid": {"AC00000000000000000000000000000000"}, "From": {from}, "ApiVersion": {"2010-04-01"},
	}
}

func TestTwilioWebhook(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		hookURL := e.srv.URL + sms.TwilioWebhookPath
		form := inbound("SM0123456789abcdef0123456789abcdef", "+14155550100", activePhone, "Your code is 777 888")

		// Forged: signed with another token, over another URL, or not at all.
		for name, sig := range map[string]string{
			"wrong token":  sign("not-the-token", hookURL, form),
			"wrong URL":    sign(twilioToken, "https://elsewhere.example"+sms.TwilioWebhookPath, form),
			"garbage":      "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
			"no signature": "",
		} {
			resp, body := e.webhook(form, "", sig)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "invalid_signature") {
				t.Errorf("%s: %d %s", name, resp.StatusCode, body)
			}
		}
		// A valid signature over parameters changed afterwards is forged too.
		changed := inbound("SM0123456789abcdef0123456789abcdef", "+14155550100", activePhone, "Your code is 000 000")
		if resp, _ := e.webhook(changed, "", sign(twilioToken, hookURL, form)); resp.StatusCode != http.StatusForbidden {
			t.Errorf("changed body: %d", resp.StatusCode)
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%d messages stored from forged requests", n)
		}

		// Valid: stored and answered with empty TwiML.
		resp, body := e.webhook(form, "", sign(twilioToken, hookURL, form))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/xml" ||
			body != `<?xml version="1.0" encoding="UTF-8"?><Response></Response>` {
			t.Fatalf("valid webhook: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var r searchResp
		e.get(e.key, "/api/sms/+15550001111/messages", &r)
		if r.TotalCount != 1 {
			t.Fatalf("total %d after a valid webhook", r.TotalCount)
		}
		m := r.Data[0]
		if m.Body != "Your code is 777 888" || m.FromNumber != "+14155550100" || m.ToNumber != activePhone || m.Direction != "inbound" ||
			m.SmsPhoneNumberID != e.active.ID || m.ProviderMessageID == nil || *m.ProviderMessageID != "SM0123456789abcdef0123456789abcdef" {
			t.Fatalf("stored %+v", m)
		}

		// Twilio retries: the same MessageSid is stored once and answered the same.
		for i := 0; i < 2; i++ {
			resp, body := e.webhook(form, "", sign(twilioToken, hookURL, form))
			if resp.StatusCode != 200 || !strings.Contains(body, "<Response></Response>") {
				t.Fatalf("duplicate %d: %d %s", i, resp.StatusCode, body)
			}
		}
		if n := e.count(); n != 1 {
			t.Fatalf("%d messages after duplicates, want 1", n)
		}

		// A query string is part of the signed URL; a short-code sender is kept as reported.
		q := "source=twilio&n=%2B1"
		sc := inbound("SMshortcode", "22395", "15550001111", "")
		if resp, _ := e.webhook(sc, q, sign(twilioToken, hookURL, sc)); resp.StatusCode != http.StatusForbidden {
			t.Errorf("signature without the query accepted: %d", resp.StatusCode)
		}
		if resp, body := e.webhook(sc, q, sign(twilioToken, hookURL+"?"+q, sc)); resp.StatusCode != 200 {
			t.Fatalf("short code: %d %s", resp.StatusCode, body)
		}
		e.get(e.key, "/api/sms/+15550001111/messages?from_number=22395", &r)
		if r.TotalCount != 1 || r.Data[0].FromNumber != "22395" || r.Data[0].Body != "" {
			t.Fatalf("short-code message %+v", r)
		}

		// Unknown and inactive numbers are rejected, with nothing stored.
		for _, c := range []struct {
			to     string
			status int
			code   string
		}{
			{"+15557770000", 404, "sms_number_not_found"},
			{disabledPhone, 409, "sms_number_inactive"},
			{"not a number", 400, "invalid_parameter"},
		} {
			f := inbound("SMother"+c.to, "+14155550100", c.to, "x")
			resp, body := e.webhook(f, "", sign(twilioToken, hookURL, f))
			if resp.StatusCode != c.status || !strings.Contains(body, c.code) {
				t.Errorf("To %s: %d %s", c.to, resp.StatusCode, body)
			}
		}
		missing := url.Values{"To": {activePhone}, "Body": {"x"}}
		if resp, body := e.webhook(missing, "", sign(twilioToken, hookURL, missing)); resp.StatusCode != 400 ||
			!strings.Contains(body, `"From"`) || !strings.Contains(body, `"MessageSid"`) {
			t.Errorf("missing From and MessageSid: %d %s", resp.StatusCode, body)
		}
		if n := e.count(); n != 2 {
			t.Fatalf("%d messages, want 2", n)
		}

		// Another organisation's number receives its own messages.
		o := inbound("SMforother", "+14155550100", otherPhone, "for other")
		if resp, _ := e.webhook(o, "", sign(twilioToken, hookURL, o)); resp.StatusCode != 200 {
			t.Fatalf("other organisation's number: %d", resp.StatusCode)
		}
		var latest struct{ Data message }
		if e.get(e.otherKey, "/api/sms/447700900123/latest", &latest); latest.Data.Body != "for other" {
			t.Fatalf("other organisation's latest %+v", latest.Data)
		}
	})
}

func TestTwilioWebhookOffAndWrongType(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		hookURL := e.srv.URL + sms.TwilioWebhookPath
		form := inbound("SMjson", "+14155550100", activePhone, "x")
		req, _ := http.NewRequest(http.MethodPost, hookURL, strings.NewReader(`{"To":"+15550001111"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Twilio-Signature", sign(twilioToken, hookURL, nil))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("JSON body: %d", resp.StatusCode)
		}
		big := inbound("SMbig", "+14155550100", activePhone, strings.Repeat("x", 70<<10))
		if resp, _ := e.webhook(big, "", sign(twilioToken, hookURL, big)); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("oversized form: %d", resp.StatusCode)
		}

		e.api.TwilioAuthToken = ""
		resp2, body := e.webhook(form, "", sign("", hookURL, form))
		if resp2.StatusCode != http.StatusNotFound || !strings.Contains(body, "webhook_not_configured") {
			t.Errorf("without a token: %d %s", resp2.StatusCode, body)
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%d messages stored", n)
		}
	})
}

func TestTwilioWebhookWakesWait(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = 30 * time.Second
		done := e.holdSearch("/api/sms/+15550001111/messages?wait=true&from_number=%2B1415")
		e.waitForWaiters()
		form := inbound("SMwake", "+14155550100", activePhone, "123456 is your code")
		if resp, _ := e.webhook(form, "", sign(twilioToken, e.srv.URL+sms.TwilioWebhookPath, form)); resp.StatusCode != 200 {
			t.Fatalf("webhook %d", resp.StatusCode)
		}
		h := <-done
		if h.status != 200 || h.r.TotalCount != 1 || h.r.Data[0].Body != "123456 is your code" {
			t.Fatalf("wait answered %+v", h)
		}
	})
}

package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

const signUpBody = `Content-Type: multipart/mixed; boundary=mix

--mix
Content-Type: multipart/alternative; boundary=alt

--alt
Content-Type: text/plain; charset=utf-8

Welcome! Your verification code is 482913.
Confirm your address: https://app.example/confirm?token=abc
--alt
Content-Type: text/html; charset=utf-8

<p>Welcome! Your verification code is <b>482913</b>.</p>
<p><a href="https://app.example/confirm?token=abc">Confirm your address</a></p>
--alt--
--mix
Content-Type: text/csv; name="terms.csv"
Content-Disposition: attachment; filename="terms.csv"

clause,text
1,be nice
--mix--
`

// TestInboxEndpoints goes through every inbox endpoint with a real email.
func TestInboxEndpoints(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		if err := c.CheckKey(ctx); err != nil {
			t.Fatal(err)
		}
		name := uniqueNamespace(t)
		ns, err := c.SaveNamespace(ctx, name, client.SettingsRequest{RetentionTime: client.Ptr(3600), QuotaLimit: client.Ptr(50)})
		if err != nil || ns.Namespace != name || ns.Settings.RetentionTime != 3600 || ns.Settings.QuotaLimit == nil || *ns.Settings.QuotaLimit != 50 || !ns.Settings.CaptureRawEmail {
			t.Fatalf("SaveNamespace = %+v, %v", ns, err)
		}
		ns, err = c.SaveNamespace(ctx, name, client.SettingsRequest{DefaultQuota: true})
		if err != nil || ns.Settings.QuotaLimit != nil || ns.Settings.RetentionTime != 3600 {
			t.Fatalf("SaveNamespace(DefaultQuota) = %+v, %v", ns, err)
		}
		all, err := c.Namespaces(ctx)
		if err != nil || !containsNamespace(all, name) {
			t.Fatalf("Namespaces = %+v, %v", all, err)
		}
		smtpSettings, err := c.SMTPSettings(ctx, name)
		if err != nil || smtpSettings.Username != name || smtpSettings.Port == 0 || smtpSettings.Password == "" {
			t.Fatalf("SMTPSettings = %+v, %v", smtpSettings, err)
		}

		to := "alice@" + name + ".localhost"
		sendMail(t, s.SMTP, "signup@app.example", to, "Welcome to App", signUpBody)
		page, err := c.SearchEmails(ctx, name, client.SearchQuery{Limit: 5, SubjectIncludes: "welcome", ToAddrPrefix: "ALICE@",
			Since: time.Now().Add(-time.Hour)})
		if err != nil || page.TotalCount != 1 || len(page.Data) != 1 || page.Options.Limit != 5 ||
			page.Options.SubjectIncludes == nil || *page.Options.SubjectIncludes != "welcome" || page.Options.FromTimestamp == nil {
			t.Fatalf("SearchEmails = %+v, %v", page, err)
		}
		e := page.Data[0]
		if e.Subject != "Welcome to App" || e.From.Address != "signup@app.example" || len(e.To) != 1 || e.To[0].Address != to ||
			e.ReceivedDate.IsZero() || e.ReceivedTimestamp != e.ReceivedDate.Unix() || !strings.Contains(e.Text, "482913") {
			t.Errorf("email = %+v", e)
		}
		if len(e.Links) != 1 || e.Links[0] != (client.Link{Href: "https://app.example/confirm?token=abc", Text: "Confirm your address"}) ||
			len(e.Codes) != 1 || e.Codes[0] != "482913" {
			t.Errorf("links %+v, codes %q", e.Links, e.Codes)
		}
		latest, err := c.LatestEmail(ctx, name)
		if err != nil || latest.ID != e.ID {
			t.Errorf("LatestEmail = %s, %v", latest.ID, err)
		}
		byID, err := c.Email(ctx, e.ID)
		if err != nil || byID.ID != e.ID || byID.HTML == "" {
			t.Errorf("Email = %+v, %v", byID, err)
		}

		if len(e.Attachments) != 1 || e.Attachments[0].Filename != "terms.csv" {
			t.Fatalf("attachments %+v", e.Attachments)
		}
		atts, err := c.Attachments(ctx, e.ID)
		if err != nil || len(atts) != 1 || atts[0].ID != e.Attachments[0].ID || atts[0].DownloadURL == "" || atts[0].ExpiresAt == nil {
			t.Fatalf("Attachments = %+v, %v", atts, err)
		}
		att, err := c.Attachment(ctx, atts[0].ID)
		if err != nil || att.ContentType != "text/csv" {
			t.Fatalf("Attachment = %+v, %v", att, err)
		}
		data, err := c.Download(ctx, att.DownloadURL)
		if err != nil || !bytes.Contains(data, []byte("be nice")) {
			t.Errorf("Download = %q, %v", data, err)
		}

		raw, err := c.RawSource(ctx, name, e.ID, e.ReceivedTimestamp)
		if err != nil || raw.ContentType != "message/rfc822" || raw.Size == 0 {
			t.Fatalf("RawSource = %+v, %v", raw, err)
		}
		if src, err := c.Download(ctx, raw.DownloadURL); err != nil || !bytes.HasPrefix(src, []byte("From: signup@app.example")) {
			t.Errorf("raw source %.40q, %v", src, err)
		}

		link, err := c.ShareEmail(ctx, e.ID, time.Hour)
		if err != nil || link.EncodedEmailID == "" || !strings.HasSuffix(link.URL, link.EncodedEmailID) || time.Until(link.ExpiresAt) > time.Hour {
			t.Fatalf("ShareEmail = %+v, %v", link, err)
		}
		shared, err := c.SharedEmail(ctx, link.EncodedEmailID)
		if err != nil || shared.ID != e.ID || len(shared.Codes) != 1 {
			t.Errorf("SharedEmail = %+v, %v", shared, err)
		}
		sharedAtt, err := c.SharedAttachment(ctx, link.EncodedEmailID, att.ID)
		if err != nil || sharedAtt.Filename != "terms.csv" {
			t.Errorf("SharedAttachment = %+v, %v", sharedAtt, err)
		}
	})
}

func containsNamespace(all []client.Namespace, name string) bool {
	for _, n := range all {
		if n.Namespace == name {
			return true
		}
	}
	return false
}

// TestSMSEndpoints sends a virtual SMS and reads it back every way.
func TestSMSEndpoints(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		numbers, err := c.SMSNumbers(ctx)
		if err != nil || len(numbers) != 1 || numbers[0].PhoneNumber != testserver.Phone || numbers[0].Status != "active" {
			t.Fatalf("SMSNumbers = %+v, %v", numbers, err)
		}
		body := "G-771204 is your verification code " + uniqueNamespace(t)
		m, err := c.SendVirtualSMS(ctx, client.VirtualSMS{FromNumber: "+44 7700 900123", ToNumber: testserver.Phone, Body: body})
		if err != nil || m.FromNumber != "+447700900123" || m.Direction != "inbound" || len(m.Codes) != 1 || m.Codes[0] != "771204" {
			t.Fatalf("SendVirtualSMS = %+v, %v", m, err)
		}
		page, err := c.SearchSMS(ctx, testserver.Phone, client.SMSQuery{Body: body, FromNumber: "+44", Direction: "inbound",
			Since: time.Now().Add(-time.Hour)})
		if err != nil || page.TotalCount != 1 || page.Data[0].ID != m.ID || page.Options.FromNumber == nil || *page.Options.FromNumber != "+44" {
			t.Fatalf("SearchSMS = %+v, %v", page, err)
		}
		latest, err := c.LatestSMS(ctx, strings.TrimPrefix(testserver.Phone, "+"))
		if err != nil || latest.ID != m.ID {
			t.Errorf("LatestSMS = %+v, %v", latest, err)
		}
	})
}

// TestDeviceEndpoints saves devices every way and asks for their codes.
func TestDeviceEndpoints(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		const secret = "JBSWY3DPEHPK3PXP"
		issuer := "Issuer" + uniqueNamespace(t)
		d1, err := c.CreateDevice(ctx, client.NewDevice{SharedSecret: secret, Name: "plain", Issuer: issuer,
			ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil || d1.Source != "shared_secret" || d1.Digits != 6 || d1.ExpiresAt == nil || d1.Name != "plain" {
			t.Fatalf("CreateDevice = %+v, %v", d1, err)
		}
		d2, err := c.CreateCustomDevice(ctx, client.CustomDevice{Secret: secret, Issuer: issuer, Digits: 8, Period: 60, Algorithm: "SHA256"})
		if err != nil || d2.Digits != 8 || d2.Period != 60 || d2.Algorithm != "SHA256" || d2.Source != "custom" {
			t.Fatalf("CreateCustomDevice = %+v, %v", d2, err)
		}
		d3, err := c.CreateBase32Device(ctx, client.CustomDevice{Secret: secret, Issuer: issuer, Username: "bob"})
		if err != nil || d3.Source != "base32_secret_key" || d3.Username == nil || *d3.Username != "bob" {
			t.Fatalf("CreateBase32Device = %+v, %v", d3, err)
		}
		d4, err := c.CreateOTPAuthDevice(ctx, client.OTPAuthDevice{URL: "otpauth://totp/" + issuer + ":carol?secret=" + secret + "&issuer=" + issuer})
		if err != nil || d4.Source != "otpauth_url" || d4.Issuer == nil || *d4.Issuer != issuer {
			t.Fatalf("CreateOTPAuthDevice = %+v, %v", d4, err)
		}
		page, err := c.Devices(ctx, client.DeviceQuery{Issuer: issuer, Limit: 10})
		if err != nil || page.TotalCount != 4 || len(page.Items) != 4 {
			t.Fatalf("Devices = %+v, %v", page, err)
		}
		got, err := c.Device(ctx, d2.ID)
		if err != nil || got.ID != d2.ID {
			t.Errorf("Device = %+v, %v", got, err)
		}
		// The saved device and the bare secret give the same code in one
		// period: both are asked for a code valid 10 s more.
		otp, err := c.OTPValidFor(ctx, d1.ID, 10*time.Second)
		if err != nil || len(otp.Code) != 6 || time.Until(otp.Expires) < 9*time.Second {
			t.Fatalf("OTPValidFor = %+v, %v", otp, err)
		}
		direct, err := c.SecretOTP(ctx, secret, 10*time.Second)
		if err != nil || direct.Code != otp.Code && !direct.Expires.After(otp.Expires) {
			t.Errorf("SecretOTP = %+v, device %+v, %v", direct, otp, err)
		}
		if eight, err := c.OTP(ctx, d2.ID); err != nil || len(eight.Code) != 8 {
			t.Errorf("OTP = %+v, %v", eight, err)
		}
		for _, d := range []client.Device{d1, d2, d3, d4} {
			if err := c.DeleteDevice(ctx, d.ID); err != nil {
				t.Errorf("DeleteDevice: %v", err)
			}
		}
		if _, err := c.OTP(ctx, d1.ID); client.ErrorCode(err) != "not_found" {
			t.Errorf("OTP of a deleted device: %v", err)
		}
	})
}

// TestErrors checks that failures carry the API's error body.
func TestErrors(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		_, err := c.Email(ctx, "01a20190-b47b-725c-89f9-47017426285b")
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "not_found" || apiErr.Status != "Not Found" ||
			apiErr.Message == "" || apiErr.RequestID == "" {
			t.Errorf("unknown email: %#v", err)
		}
		_, err = c.SearchEmails(ctx, "default", client.SearchQuery{Limit: 21, Offset: -1})
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "invalid_parameter" || len(apiErr.Errors) != 2 ||
			apiErr.Errors[0].Field != "limit" || apiErr.Errors[0].Detail[0].Description != "must be between 1 and 20" {
			t.Errorf("bad search: %#v", err)
		}
		if !strings.Contains(err.Error(), "400 invalid_parameter: limit must be between 1 and 20") {
			t.Errorf("message %q", err.Error())
		}
		wrong, _ := client.New(s.URL, "cbx_not_a_key")
		if err := wrong.CheckKey(ctx); client.ErrorCode(err) != "invalid_api_key" {
			t.Errorf("wrong key: %v", err)
		}
		if _, err := c.LatestEmail(ctx, uniqueNamespace(t)); client.ErrorCode(err) != "not_found" {
			t.Errorf("unknown namespace: %v", err)
		}
	})
}

// countingTransport counts requests and tells a test when it has seen some.
type countingTransport struct {
	mu    sync.Mutex
	n     int
	waits map[int]chan struct{}
}

func newCountingTransport() *countingTransport {
	return &countingTransport{waits: map[int]chan struct{}{}}
}

func (ct *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ct.mu.Lock()
	ct.n++
	if ch, ok := ct.waits[ct.n]; ok {
		close(ch)
		delete(ct.waits, ct.n)
	}
	ct.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// seen returns a channel closed once the transport has sent n requests.
func (ct *countingTransport) seen(n int) <-chan struct{} {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ch := make(chan struct{})
	if ct.n >= n {
		close(ch)
	} else {
		ct.waits[n] = ch
	}
	return ch
}

func (ct *countingTransport) count() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.n
}

// TestWaitForEmailSpansHolds waits while the server's hold ends three times
// with no match, then sends the mail: the wait follows each 307 and returns
// the mail.
func TestWaitForEmailSpansHolds(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, _ *client.Client) {
		ct := newCountingTransport()
		c, _ := client.New(s.URL, testserver.Key, client.WithHTTPClient(&http.Client{Transport: ct}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		name := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, name, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		type result struct {
			e   client.Email
			err error
		}
		done := make(chan result, 1)
		fourth := ct.seen(ct.count() + 4) // the first search and three repeats after 307s
		go func() {
			e, err := c.WaitForEmail(ctx, name, client.Filter{To: "bob@", Subject: "reset"})
			done <- result{e, err}
		}()
		select {
		case <-fourth:
		case r := <-done:
			t.Fatalf("the wait ended before any mail was sent: %+v", r)
		}
		sendMail(t, s.SMTP, "no-reply@app.example", "bob@"+name+".localhost", "Password reset",
			"Content-Type: text/plain\n\nReset it: https://app.example/reset?t=9\n")
		r := <-done
		if r.err != nil || r.e.Subject != "Password reset" || len(r.e.Links) != 1 || r.e.Links[0].Href != "https://app.example/reset?t=9" {
			t.Fatalf("WaitForEmail = %+v, %v", r.e, r.err)
		}
	})
}

// TestWaitForEmailEndsWithContext cancels a wait held by the server, and lets
// another run out of time: both end with ErrWaitEnded and their context's
// error.
func TestWaitForEmailEndsWithContext(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, _ *client.Client) {
		ct := newCountingTransport()
		c, _ := client.New(s.URL, testserver.Key, client.WithHTTPClient(&http.Client{Transport: ct}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		second := ct.seen(ct.count() + 2)
		go func() {
			_, err := c.WaitForEmail(ctx, "default", client.Filter{Subject: "never sent " + uniqueNamespace(t)})
			done <- err
		}()
		select { // held once, redirected, held again
		case <-second:
		case err := <-done:
			t.Fatalf("the wait ended before it was cancelled: %v", err)
		}
		cancel()
		if err := <-done; !errors.Is(err, client.ErrWaitEnded) || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled wait: %v", err)
		}

		ctx, cancel = context.WithTimeout(context.Background(), 3*hold)
		defer cancel()
		_, err := c.WaitForEmail(ctx, "default", client.Filter{Subject: "never sent " + uniqueNamespace(t)})
		if !errors.Is(err, client.ErrWaitEnded) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("wait past its deadline: %v", err)
		}
	})
}

// TestWaitForSMSSpansHolds is TestWaitForEmailSpansHolds for SMS.
func TestWaitForSMSSpansHolds(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, _ *client.Client) {
		ct := newCountingTransport()
		c, _ := client.New(s.URL, testserver.Key, client.WithHTTPClient(&http.Client{Transport: ct}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		marker := uniqueNamespace(t)
		var got atomic.Value
		done := make(chan error, 1)
		third := ct.seen(ct.count() + 3)
		go func() {
			m, err := c.WaitForSMS(ctx, testserver.Phone, client.SMSFilter{Body: marker})
			got.Store(m)
			done <- err
		}()
		select {
		case <-third:
		case err := <-done:
			t.Fatalf("the wait ended before any SMS was sent: %v", err)
		}
		other, _ := client.New(s.URL, testserver.Key)
		if _, err := other.SendVirtualSMS(ctx, client.VirtualSMS{FromNumber: "+15005550006", ToNumber: testserver.Phone,
			Body: "Your login code is 6610 (" + marker + ")"}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if m := got.Load().(client.SMSMessage); len(m.Codes) != 1 || m.Codes[0] != "6610" {
			t.Errorf("WaitForSMS = %+v", m)
		}
	})
}

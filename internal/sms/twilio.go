package sms

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/problem"
)

// TwilioWebhookPath is where a Twilio number's "A message comes in" webhook
// points (HTTP POST): CATCHBOX_PUBLIC_URL + TwilioWebhookPath.
const TwilioWebhookPath = "/webhooks/twilio/sms"

// maxWebhookBytes bounds a webhook's form body. Twilio's inbound parameters
// (a 1600-character body, addresses, media URLs) fit in a few KiB.
const maxWebhookBytes = 64 << 10

// emptyTwiML is the answer to an inbound message: a TwiML document with no
// verbs, so the provider sends no reply.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`

// TwilioSignature computes X-Twilio-Signature as Twilio documents it ("Secure
// your webhooks"): the full URL Twilio requested (scheme, host, path and query,
// as configured), followed by every POST parameter's name and value, sorted by
// name (byte order; a repeated name's values in byte order), without
// separators; HMAC-SHA1 of that with the account's auth token as the key,
// Base64-encoded.
func TwilioSignature(authToken, fullURL string, form url.Values) string {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(fullURL))
	for _, k := range names {
		vs := append([]string(nil), form[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			mac.Write([]byte(k))
			mac.Write([]byte(v))
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ValidTwilioSignature reports whether signature is Twilio's for the request. As
// Twilio's own validators do, it accepts the URL with and without the scheme's
// standard port (:443, :80), since Twilio has signed both forms. Comparison is
// constant-time.
func ValidTwilioSignature(authToken, signature, fullURL string, form url.Values) bool {
	if authToken == "" || signature == "" {
		return false
	}
	ok := false
	for _, u := range portVariants(fullURL) {
		if hmac.Equal([]byte(signature), []byte(TwilioSignature(authToken, u, form))) {
			ok = true
		}
	}
	return ok
}

// portVariants returns u, and u with its scheme's standard port added when it
// has no port or removed when it has exactly that port.
func portVariants(u string) []string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return []string{u}
	}
	std := map[string]string{"https": "443", "http": "80"}[p.Scheme]
	if std == "" {
		return []string{u}
	}
	other := *p
	switch p.Port() {
	case "":
		other.Host = net.JoinHostPort(p.Hostname(), std)
	case std:
		other.Host = p.Hostname()
		if strings.Contains(other.Host, ":") {
			other.Host = "[" + other.Host + "]"
		}
	default:
		return []string{u}
	}
	return []string{u, other.String()}
}

// TwilioInboundHandler answers Twilio's inbound-message webhook. The request is
// form-encoded and signed with the account's auth token; a valid one for an
// active number is stored on it (MessageSid as provider_message_id, once) and
// answered with empty TwiML. Nothing is stored for a bad signature (403), an
// unknown number (404) or a number that is not active (409): client errors,
// which Twilio shows in its debugger and which a retry would meet again.
func (a *API) TwilioInboundHandler(w http.ResponseWriter, r *http.Request) error {
	if a.TwilioAuthToken == "" {
		return httpx.Errorf(http.StatusNotFound, "webhook_not_configured",
			"the Twilio webhook is off: set CATCHBOX_TWILIO_AUTH_TOKEN to the account's auth token")
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return httpx.Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"the webhook takes application/x-www-form-urlencoded, as Twilio sends it")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxWebhookBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpx.Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", maxWebhookBytes)
		}
		return httpx.Errorf(http.StatusBadRequest, "invalid_body", "request body is not a valid form")
	}
	signedURL := a.publicURL(r) + r.URL.RequestURI()
	if !ValidTwilioSignature(a.TwilioAuthToken, r.Header.Get("X-Twilio-Signature"), signedURL, r.PostForm) {
		slog.Warn("Rejected an SMS webhook with a bad signature", "url", signedURL, "remote_addr", r.RemoteAddr)
		return httpx.Errorf(http.StatusForbidden, "invalid_signature",
			"X-Twilio-Signature does not match; check CATCHBOX_TWILIO_AUTH_TOKEN and that CATCHBOX_PUBLIC_URL is the URL configured at the provider")
	}
	f := r.PostForm
	var fields problem.Fields
	to, err := NormalizePhone(f.Get("To"))
	if err != nil {
		fields.Add("To", err.Error())
	}
	from, ok := sender(f.Get("From"))
	if !ok {
		fields.Add("From", "must be a phone number, short code or sender id")
	}
	sid := f.Get("MessageSid")
	if sid == "" {
		sid = f.Get("SmsMessageSid") // the older name of the same parameter
	}
	if sid == "" || len(sid) > 64 {
		fields.Add("MessageSid", "is required")
	}
	if err := fields.Err(); err != nil {
		return err
	}
	n, err := a.Service.NumberByPhone(r.Context(), to)
	if errors.Is(err, ErrNotFound) {
		return httpx.Errorf(http.StatusNotFound, "sms_number_not_found", "%s is not an SMS number of this server", to)
	}
	if err != nil {
		return err
	}
	m, created, err := a.Service.Receive(r.Context(), n, Inbound{From: from, Body: f.Get("Body"), ProviderMessageID: sid})
	if errors.Is(err, ErrInactive) {
		return inactive(n)
	}
	if err != nil {
		return err
	}
	if created {
		slog.Info("Received an SMS from the provider", "sms_number_id", n.ID, "message_id", m.ID, "provider_message_id", sid)
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(emptyTwiML))
	return nil
}

// publicURL is the base URL the provider was given; without one configured, the
// request's own scheme and host.
func (a *API) publicURL(r *http.Request) string {
	if a.PublicURL != nil {
		if u := a.PublicURL(); u != "" {
			return strings.TrimRight(u, "/")
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Package httpapi wires the HTTP API: every route in one function, and the
// middleware every request passes through (request id, panic recovery, body
// limit, request limits, API-key authentication). The handlers themselves live
// with their domain packages.
package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/webhook"
)

// Deps are the services whose handlers the routes call. A feature with
// endpoints adds its service here and its endpoints to routes.
type Deps struct {
	Tenants      *tenant.Service
	Inbox        *inbox.API
	SMS          *sms.API
	TOTP         *totp.Service
	Outbound     *outbound.API
	SMTPEndpoint tenant.SMTPEndpoint
	// Limits are the request limits of the groups; nil limits nothing.
	Limits *Limits

	Deliverability *deliverability.Service
	Webhooks       *webhook.Service
}

// NewRouter returns the HTTP handler of the whole API: the middleware every
// request passes through, the contract's 404 and 405 bodies, and routes.
func NewRouter(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, recoverPanics, limitBody)
	r.NotFound(d.Limits.byAddr(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, r, httpx.Errorf(http.StatusNotFound, "route_not_found", "no such endpoint: %s %s", r.Method, r.URL.Path))
	})).ServeHTTP)
	words := &pathWords{root: r}
	r.MethodNotAllowed(d.Limits.byAddr(http.HandlerFunc(words.answer)).ServeHTTP)
	routes(r.With(words.guard), d)
	return r
}

// routes is the route table: every endpoint of the API, grouped by what
// authenticates a request. The handlers live with their domain packages. A new
// endpoint is one line in its group; a new kind of credential (the dashboard's
// user sessions) is a new group with its middleware. Requests without a
// credential of their own are limited per client address, keyed ones per key
// (Limits).
func routes(r chi.Router, d Deps) {
	// No credential.
	open := group{r.With(d.Limits.byAddr)}
	open.get("/healthz", healthHandler)
	open.get("/api/openapi.yaml", openAPIHandler)

	// Signed links: the signature in the URL is the credential, so clients can
	// fetch a download_url bare.
	signed := group{r.With(d.Limits.byAddr)}
	signed.get("/download/attachments/{id}", d.Inbox.DownloadAttachmentHandler)
	signed.get("/download/raw/{id}", d.Inbox.DownloadRawHandler)

	// Provider webhooks: the provider's signature of the request is the credential.
	webhook := group{r.With(d.Limits.byAddr)}
	webhook.post(sms.TwilioWebhookPath, d.SMS.TwilioInboundHandler)

	// X-Api-Key: every handler acts for the key's organisation (tenant.OrgFrom).
	key := group{r.With(d.Limits.guardAuth, d.Tenants.RequireKey, d.Limits.byKey)}
	key.get("/api/test", d.Tenants.TestKeyHandler)
	key.get("/api/namespaces", d.Tenants.ListNamespacesHandler)
	key.post("/api/namespace/{namespace}/settings", d.Tenants.UpsertSettingsHandler)
	key.get("/api/smtp/{namespace}", d.Tenants.SMTPSettingsHandler(d.SMTPEndpoint))

	key.get("/api/emails/{namespace}/inbox", d.Inbox.SearchInboxHandler)
	key.get("/api/emails/{namespace}/latest", d.Inbox.LatestEmailHandler)
	key.get("/api/emails/{emailId}", d.Inbox.GetEmailHandler)
	key.get("/api/emails/{emailId}/attachments", d.Inbox.ListAttachmentsHandler)
	key.get("/api/attachments/{id}", d.Inbox.GetAttachmentHandler)
	key.get("/api/emails/{namespace}/{emailId}/deliverability-report/raw-source", d.Inbox.RawSourceHandler)
	key.post("/api/emails/{emailId}/share", d.Inbox.CreateShareHandler)
	key.get("/api/share/email/{encodedEmailId}", d.Inbox.GetSharedEmailHandler)
	key.get("/api/share/email/{encodedEmailId}/attachment/{attachmentId}", d.Inbox.GetSharedAttachmentHandler)

	key.get("/api/sms/numbers", d.SMS.ListNumbersHandler)
	key.post("/api/sms/virtual", d.SMS.VirtualSMSHandler)
	key.get("/api/sms/{phone_number}/messages", d.SMS.SearchMessagesHandler)
	key.get("/api/sms/{phone_number}/latest", d.SMS.LatestMessageHandler)

	key.get("/api/devices", d.TOTP.ListDevicesHandler)
	key.post("/api/devices", d.TOTP.CreateSharedSecretDeviceHandler)
	key.post("/api/devices/custom", d.TOTP.CreateCustomDeviceHandler)
	key.post("/api/devices/base32-secret-key", d.TOTP.CreateBase32DeviceHandler)
	key.post("/api/devices/otpauth-url", d.TOTP.CreateOtpauthDeviceHandler)
	key.post("/api/devices/otp", d.TOTP.SecretOTPHandler)
	key.get("/api/devices/{deviceId}", d.TOTP.GetDeviceHandler)
	key.get("/api/devices/{deviceId}/otp", d.TOTP.DeviceOTPHandler)
	key.delete("/api/devices/{deviceId}", d.TOTP.DeleteDeviceHandler)

	// Outbound email. /api/emails/send and /api/emails/outbound are static
	// segments, which chi tries before the {emailId} and {namespace} above.
	key.post("/api/emails/send", d.Outbound.SendEmailHandler)
	key.post("/api/emails/{emailId}/reply", d.Outbound.ReplyToEmailHandler)
	key.post("/api/emails/{emailId}/forward", d.Outbound.ForwardEmailHandler)
	key.get("/api/emails/outbound", d.Outbound.ListOutboundHandler)
	key.get("/api/emails/outbound/{outboundEmailId}", d.Outbound.GetOutboundHandler)
	key.get("/api/emails/outbound/{outboundEmailId}/attachments/{attachmentId}", d.Outbound.OutboundAttachmentHandler)
	key.post("/api/emails/outbound/{outboundEmailId}/cancel", d.Outbound.CancelOutboundHandler)
	key.post("/api/emails/{emailId}/deliverability-report", d.Deliverability.RequestReportHandler)
	key.get("/api/emails/{emailId}/deliverability-report", d.Deliverability.GetReportHandler)

	// Webhook endpoints of the key's organisation and their deliveries.
	key.post("/api/webhooks", d.Webhooks.CreateHandler)
	key.get("/api/webhooks", d.Webhooks.ListHandler)
	key.get("/api/webhooks/{webhookId}", d.Webhooks.GetHandler)
	key.patch("/api/webhooks/{webhookId}", d.Webhooks.UpdateHandler)
	key.delete("/api/webhooks/{webhookId}", d.Webhooks.DeleteHandler)
	key.post("/api/webhooks/{webhookId}/rotate-secret", d.Webhooks.RotateSecretHandler)
	key.post("/api/webhooks/{webhookId}/test", d.Webhooks.TestHandler)
	key.get("/api/webhooks/{webhookId}/deliveries", d.Webhooks.DeliveriesHandler)
	key.post("/api/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", d.Webhooks.RedeliverHandler)
}

// group registers handlers on one group of the route table, one method each.
type group struct{ r chi.Router }

func (g group) get(path string, h httpx.Handler)    { g.r.Method(http.MethodGet, path, h) }
func (g group) post(path string, h httpx.Handler)   { g.r.Method(http.MethodPost, path, h) }
func (g group) delete(path string, h httpx.Handler) { g.r.Method(http.MethodDelete, path, h) }
func (g group) patch(path string, h httpx.Handler)  { g.r.Method(http.MethodPatch, path, h) }

// healthHandler answers GET /healthz: the process serves HTTP. It does not ask
// the store, so a load balancer does not take every replica out at once while
// the database restarts (each request reports its own failure).
func healthHandler(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := httpx.NewRequestID()
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(httpx.WithRequestID(r.Context(), id)))
	})
}

func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.Error("Handler panicked", "method", r.Method, "path", r.URL.Path,
					"request_id", httpx.RequestID(r.Context()), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				httpx.WriteError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > httpx.MaxBodyBytes {
			httpx.WriteError(w, r, httpx.Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", httpx.MaxBodyBytes))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NewHTTPServer returns an http.Server with time limits, so no client can hold a
// connection open by sending slowly. Write timeout is left to handlers: a held
// wait request lasts as long as the configured hold.
func NewHTTPServer(h http.Handler, waitHold time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      waitHold + 60*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

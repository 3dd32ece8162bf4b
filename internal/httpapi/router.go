// Package httpapi wires the HTTP API: every route in one function, and the
// middleware every request passes through (request id, panic recovery, body
// limit, request limits, API-key authentication). The handlers themselves live
// with their domain packages.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/htmlcheck"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/preview"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
	"github.com/catchbox/catchbox/internal/version"
	"github.com/catchbox/catchbox/internal/web"
	"github.com/catchbox/catchbox/internal/webhook"
)

// Deps are the services whose handlers the routes call. A feature with
// endpoints adds its service here and its endpoints to routes.
type Deps struct {
	Tenants      *tenant.Service
	Inbox        *inbox.API
	SMS          *sms.API
	TOTP         *totp.Service
	Outbound     *outbound.Service
	SMTPEndpoint tenant.SMTPEndpoint
	MailboxPorts tenant.MailboxPorts
	// Limits are the request limits of the groups; nil limits nothing.
	Limits *Limits

	Deliverability *deliverability.Service
	// HTMLCheck answers the email's HTML client support check.
	HTMLCheck *htmlcheck.Service
	// Previews answers the email's screenshots (501 without Chromium).
	Previews *preview.Service
	// LinkCheck serves the link checks of emails.
	LinkCheck *linkcheck.Service
	// Sessions are the dashboard's signed-in users; nil: API keys only.
	Sessions *tenant.Sessions
	// Web is the dashboard; nil: no pages.
	Web *web.Dashboard

	// AccessLog logs every request (observe); without it only failures are.
	AccessLog bool
	// Metrics serves GET /metrics; nil leaves the route out.
	Metrics http.Handler
	// Drain, when closed, ends every held wait=true request at once with its
	// 307 (graceful shutdown); nil never does.
	Drain <-chan struct{}
	// Ready answers GET /readyz: nil when the service can serve (its store
	// reachable and migrated), else why not.
	Ready func(context.Context) error

	Webhooks *webhook.Service
	// Chaos holds the namespaces' SMTP fault rules.
	Chaos *chaos.Service
}

// NewRouter returns the HTTP handler of the whole API: the middleware every
// request passes through, the contract's 404 and 405 bodies, and routes.
func NewRouter(d Deps) http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, observe(d.AccessLog, &limit.Quiet{}, d.Limits.ClientKey), recoverPanics, limitBody)
	if d.Drain != nil {
		r.Use(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(notify.WithDrain(r.Context(), d.Drain)))
			})
		})
	}
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
	open.get("/readyz", readyHandler(d.Ready))
	open.get("/api/version", versionHandler)
	open.get("/api/openapi.yaml", openAPIHandler)
	if d.Metrics != nil {
		open.r.Method(http.MethodGet, "/metrics", d.Metrics)
	}

	// Signed links: the signature in the URL is the credential, so clients can
	// fetch a download_url bare.
	signed := group{r.With(d.Limits.byAddr)}
	signed.get("/download/attachments/{id}", d.Inbox.DownloadAttachmentHandler)
	signed.get("/download/raw/{id}", d.Inbox.DownloadRawHandler)
	signed.get("/verify/destinations/{destinationId}", d.Outbound.VerifyDestinationHandler)

	// Provider webhooks: the provider's signature of the request is the credential.
	webhook := group{r.With(d.Limits.byAddr)}
	webhook.post(sms.TwilioWebhookPath, d.SMS.TwilioInboundHandler)

	// X-Api-Key, or a dashboard session: every handler acts for the
	// principal's organisation (tenant.OrgFrom).
	key := group{r.With(d.Limits.guardAuth, d.Tenants.RequireAPI(d.Sessions), d.Limits.byKey)}
	key.get("/api/test", d.Tenants.TestKeyHandler)
	key.get("/api/namespaces", d.Tenants.ListNamespacesHandler)
	key.post("/api/namespace/{namespace}/settings", d.Tenants.UpsertSettingsHandler)
	key.get("/api/smtp/{namespace}", d.Tenants.SMTPSettingsHandler(d.SMTPEndpoint, d.MailboxPorts))
	key.put("/api/namespace/{namespace}/chaos", d.Chaos.SetRulesHandler)
	key.get("/api/namespace/{namespace}/chaos", d.Chaos.GetRulesHandler)
	key.delete("/api/namespace/{namespace}/chaos", d.Chaos.ClearRulesHandler)

	key.get("/api/emails/{namespace}/inbox", d.Inbox.SearchInboxHandler)
	key.delete("/api/emails/{namespace}/inbox", d.Inbox.ClearInboxHandler)
	key.get("/api/emails/{namespace}/latest", d.Inbox.LatestEmailHandler)
	key.get("/api/emails/{emailId}", d.Inbox.GetEmailHandler)
	key.delete("/api/emails/{emailId}", d.Inbox.DeleteEmailHandler)
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
	key.get("/api/suppressions", d.Outbound.ListSuppressionsHandler)
	key.delete("/api/suppressions/{address}", d.Outbound.DeleteSuppressionHandler)
	key.post("/api/destinations", d.Outbound.CreateDestinationHandler)
	key.get("/api/destinations", d.Outbound.ListDestinationsHandler)
	key.delete("/api/destinations/{destinationId}", d.Outbound.DeleteDestinationHandler)
	key.post("/api/emails/{emailId}/deliverability-report", d.Deliverability.RequestReportHandler)
	key.get("/api/emails/{emailId}/deliverability-report", d.Deliverability.GetReportHandler)
	key.get("/api/emails/{emailId}/html-check", d.HTMLCheck.CheckHandler)
	key.get("/api/emails/{emailId}/preview.png", d.Previews.PreviewHandler)
	key.post("/api/emails/{emailId}/link-check", d.LinkCheck.RequestHandler)
	key.get("/api/emails/{emailId}/link-check", d.LinkCheck.GetHandler)

	if d.Web != nil {
		dashboard(r, d)
	}
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

// dashboard is the route table of the dashboard's pages. Every page refuses
// state-changing requests from other origins (web.Dashboard.Protect); the
// pages of signed-in users need the session cookie (web.Dashboard.RequireUser)
// and are limited per user, the others per client address. GET / is the
// sign-in page until someone signs in.
func dashboard(r chi.Router, d Deps) {
	w := d.Web
	open := pages{r.With(d.Limits.byAddr, w.Protect)}
	open.get("/", w.HomeHandler)
	open.get("/signin", w.SignInPageHandler)
	open.post("/signin", w.SignInHandler)
	open.get("/signin/link/{token}", w.SignInLinkHandler)
	r.With(d.Limits.byAddr).Method(http.MethodGet, "/static/*", w.Static())

	user := pages{r.With(w.Protect, w.RequireUser, d.Limits.byKey)}
	user.post("/signout", w.SignOutHandler)
	user.post("/organisation/switch", w.SwitchOrgHandler)

	user.get("/inboxes", w.NamespacesHandler)
	user.post("/inboxes", w.CreateNamespaceHandler)
	user.get("/inboxes/{namespace}", w.InboxHandler)
	user.get("/inboxes/{namespace}/rows", w.RowsHandler)
	user.get("/inboxes/{namespace}/events", w.EventsHandler)
	user.post("/inboxes/{namespace}/clear", w.ClearHandler)
	user.get("/inboxes/{namespace}/settings", w.SettingsHandler)
	user.post("/inboxes/{namespace}/settings", w.UpdateSettingsHandler)
	user.post("/inboxes/{namespace}/chaos", w.SetChaosHandler)
	user.post("/inboxes/{namespace}/chaos/add", w.AddChaosHandler)
	user.post("/inboxes/{namespace}/chaos/remove", w.RemoveChaosHandler)
	user.post("/inboxes/{namespace}/chaos/clear", w.ClearChaosHandler)

	user.get("/emails/{emailId}", w.EmailHandler)
	user.get("/emails/{emailId}/body", w.BodyHandler)
	user.post("/emails/{emailId}/delete", w.DeleteEmailHandler)
	user.post("/emails/{emailId}/share", w.ShareHandler)
	user.post("/emails/{emailId}/report", w.RequestReportHandler)
	user.post("/emails/{emailId}/link-check", w.RequestLinkCheckHandler)
	user.post("/emails/{emailId}/reply", w.ReplyHandler)
	user.post("/emails/{emailId}/forward", w.ForwardHandler)

	user.get("/organisation", w.OrganisationHandler)
	user.post("/organisation/keys", w.CreateKeyHandler)
	user.post("/organisation/keys/{keyId}/revoke", w.RevokeKeyHandler)

	user.get("/authenticators", w.AuthenticatorsHandler)
	user.post("/authenticators", w.AddAuthenticatorHandler)
	user.post("/authenticators/{deviceId}/delete", w.DeleteAuthenticatorHandler)

	user.get("/sms", w.SMSHandler)
	user.get("/sms/{phone}", w.MessagesHandler)
	user.get("/sms/{phone}/rows", w.MessageRowsHandler)
	user.get("/sms/{phone}/events", w.SMSEventsHandler)
	user.post("/sms/{phone}/virtual", w.VirtualSMSHandler)

	user.get("/outbound", w.OutboundHandler)
	user.post("/outbound/send", w.SendHandler)
	user.get("/outbound/{id}", w.OutboundEmailHandler)
}

// pages registers dashboard pages on one group, one method each.
type pages struct{ r chi.Router }

func (p pages) get(path string, h web.Handler)  { p.r.Method(http.MethodGet, path, h) }
func (p pages) post(path string, h web.Handler) { p.r.Method(http.MethodPost, path, h) }

// group registers handlers on one group of the route table, one method each.
type group struct{ r chi.Router }

func (g group) get(path string, h httpx.Handler)    { g.r.Method(http.MethodGet, path, h) }
func (g group) post(path string, h httpx.Handler)   { g.r.Method(http.MethodPost, path, h) }
func (g group) delete(path string, h httpx.Handler) { g.r.Method(http.MethodDelete, path, h) }
func (g group) patch(path string, h httpx.Handler)  { g.r.Method(http.MethodPatch, path, h) }
func (g group) put(path string, h httpx.Handler)    { g.r.Method(http.MethodPut, path, h) }

// healthHandler answers GET /healthz: the process serves HTTP. It does not ask
// the store, so a load balancer does not take every replica out at once while
// the database restarts (each request reports its own failure).
func healthHandler(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyHandler answers GET /readyz: 200 when ready says the service can serve
// (the store answers and its schema is this build's), else 503 with the
// reason, so that a load balancer or an orchestrator sends no traffic to a
// replica that would fail it. Unlike /healthz it asks the store.
func readyHandler(ready func(context.Context) error) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				slog.Warn("Not ready", "request_id", httpx.RequestID(r.Context()), "err", err)
				return httpx.Errorf(http.StatusServiceUnavailable, "not_ready", "not ready: %v", err)
			}
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
		return nil
	}
}

// readyTimeout bounds the store checks of GET /readyz.
const readyTimeout = 2 * time.Second

// versionHandler answers GET /api/version with this build's version.
func versionHandler(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, struct {
		version.Info
		APIVersion string `json:"api_version"`
	}{version.Get(), apiVersion})
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

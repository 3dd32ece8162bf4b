package outbound

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// API serves the outbound endpoints: send, reply and forward, which check a
// request against the seed's sending rules, build the message and store it
// with its delivery job; the list, one email, an attachment's content, and
// cancel. internal/server builds it.
type API struct {
	Store *Store
	DB    *store.DB
	// Jobs is the queue the delivery job goes to, in the transaction that
	// creates the email.
	Jobs     *jobs.Queue
	Tenants  *tenant.Service
	Searcher *inbox.Searcher
	// Routes says which namespace an address belongs to, by the rule the
	// SMTP listener applies (internal/routing); its domain is the mail
	// domain of senders and Message-IDs.
	Routes *routing.Rule
	// Verifier mails and checks the verification links of destinations.
	Verifier *Verifier
}

// DefaultSenderLocal is the local part of the sender of a message whose
// request has no from (the seed's sending rule 3).
const DefaultSenderLocal = "outbound-delivery"

// outgoing is a checked request: what to make an outbound email of.
type outgoing struct {
	draft
	Type   Type
	Source string // the inbound email replied to or forwarded
	// InReplyTo and References thread a reply (RFC 5322 section 3.6.4).
	InReplyTo, References []string
}

// SendEmailHandler answers POST /api/emails/send?namespace=: a new email from
// the namespace, 202 with the summary form once it is stored with its
// delivery job.
func (a *API) SendEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var in input
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	q := httpx.NewQuery(r)
	name, ok := q.String("namespace", MaxNamespace)
	c := checker{fields: q.Fields()}
	if !q.Has("namespace") || ok && strings.TrimSpace(name) == "" {
		c.fail("namespace", "is required")
	}
	d := c.check(in, newRules, nil)
	if err := c.fields.Err(); err != nil {
		return err
	}
	org := tenant.OrgFrom(r.Context())
	ns, err := a.Tenants.VisibleNamespace(r.Context(), org.ID, strings.TrimSpace(name))
	if errors.Is(err, tenant.ErrNotFound) {
		return httpx.NotFound("namespace " + quote(name))
	}
	if err != nil {
		return err
	}
	e, err := a.create(r.Context(), org.ID, ns, outgoing{draft: d, Type: TypeNew})
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// ReplyToEmailHandler answers POST /api/emails/{emailId}/reply: a reply from
// the inbound email's namespace to its Reply-To or From, threaded to it.
func (a *API) ReplyToEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var body replyInput
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return err
	}
	in := input{From: body.From, Cc: body.Cc, Bcc: body.Bcc, Subject: body.Subject, HTML: body.HTML,
		Text: body.Text, Attachments: body.Attachments}
	src, ns, err := a.sourceEmail(r)
	if err != nil {
		return err
	}
	derived := replyRecipients(src.Email)
	if len(derived) == 0 {
		return httpx.Errorf(http.StatusConflict, "no_reply_address", "the email has no Reply-To or From address to reply to")
	}
	var c checker
	d := c.check(in, replyRules, derived)
	if err := c.fields.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(d.Subject) == "" {
		d.Subject = replySubject(src.Subject)
	}
	o := outgoing{draft: d, Type: TypeReply, Source: src.ID}
	o.InReplyTo, o.References = threading(src.Headers)
	e, err := a.create(r.Context(), tenant.OrgFrom(r.Context()).ID, ns, o)
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// ForwardEmailHandler answers POST /api/emails/{emailId}/forward: the inbound
// email forwarded from its namespace, after the optional html and text, with
// its attachments.
func (a *API) ForwardEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var body forwardInput
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return err
	}
	in := input{From: body.From, To: body.To, Cc: body.Cc, Bcc: body.Bcc, Subject: body.Subject, HTML: body.HTML,
		Text: body.Text, Attachments: body.Attachments}
	src, ns, err := a.sourceEmail(r)
	if err != nil {
		return err
	}
	var c checker
	d := c.check(in, forwardRules, nil)
	carried, err := a.originalAttachments(r.Context(), src.ID)
	if err != nil {
		return err
	}
	if n := len(carried) + len(in.Attachments); len(carried) > 0 && len(in.Attachments) <= MaxAttachments && n > MaxAttachments {
		c.fail("attachments", "with the %d attachments of the forwarded email makes %d: at most %d in total", len(carried), n, MaxAttachments)
	}
	for i, at := range in.Attachments {
		for _, o := range carried {
			if at.ContentID != nil && o.ContentID != "" && strings.EqualFold(contentID(*at.ContentID), o.ContentID) {
				c.fail(fmt.Sprintf("attachments[%d].content_id", i), "names %s, the Content-ID of an attachment of the forwarded email", quote(o.ContentID))
			}
		}
	}
	if err := c.fields.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(d.Subject) == "" {
		d.Subject = forwardSubject(src.Subject)
	}
	d.HTML, d.Text = forwardBodies(d.HTML, d.Text, src.Email)
	d.Attachments = append(carried, d.Attachments...)
	e, err := a.create(r.Context(), tenant.OrgFrom(r.Context()).ID, ns, outgoing{draft: d, Type: TypeForward, Source: src.ID})
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// accepted answers a created email: 202, its summary form, and where its
// state can be followed (contract section 5).
func accepted(w http.ResponseWriter, e Email) error {
	w.Header().Set("Location", "/api/emails/outbound/"+e.ID)
	httpx.WriteJSON(w, http.StatusAccepted, e)
	return nil
}

// sourceEmail loads the inbound email of the {emailId} parameter, and its
// namespace, if the request's organisation may read it: 404 otherwise, as if
// it did not exist.
func (a *API) sourceEmail(r *http.Request) (inbox.StoredEmail, tenant.Namespace, error) {
	id := chi.URLParam(r, "emailId")
	if _, err := uuid.Parse(id); err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, httpx.NotFound("email")
	}
	e, err := a.Searcher.ByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, tenant.Namespace{}, httpx.NotFound("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, err
	}
	ns, err := a.Tenants.NamespaceByID(r.Context(), e.NamespaceID)
	if errors.Is(err, tenant.ErrNotFound) || err == nil && !ns.VisibleTo(tenant.OrgFrom(r.Context()).ID) {
		return inbox.StoredEmail{}, tenant.Namespace{}, httpx.NotFound("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, err
	}
	return e, ns, nil
}

// originalAttachments are the attachments of a forwarded email with their
// bytes, in message order: parts with a Content-ID stay inline, so that the
// forwarded HTML still shows them.
func (a *API) originalAttachments(ctx context.Context, emailID string) ([]NewAttachment, error) {
	atts, err := a.Searcher.Attachments(ctx, emailID)
	if err != nil {
		return nil, err
	}
	var out []NewAttachment
	for _, at := range atts {
		data, err := a.Searcher.AttachmentData(ctx, at.ID)
		if err != nil {
			return nil, fmt.Errorf("attachment %s of forwarded email %s: %w", at.ID, emailID, err)
		}
		na := NewAttachment{Filename: at.Filename, ContentType: at.ContentType, ContentID: at.ContentID,
			Disposition: DispositionAttachment, Data: data}
		if at.ContentID != "" {
			na.Disposition = DispositionInline
		}
		if _, err := mediaType(na.ContentType); err != nil {
			na.ContentType = "application/octet-stream"
		}
		out = append(out, na)
	}
	return out, nil
}

// create applies the rules that need the namespace (the sender belongs to
// it; every recipient is in it or a verified destination), builds the message
// and checks its size, then stores it with its delivery job in one
// transaction: the email exists exactly when its delivery does.
func (a *API) create(ctx context.Context, orgID string, ns tenant.Namespace, o outgoing) (Email, error) {
	from := Address{Email: DefaultSenderLocal + "@" + ns.Name + "." + a.Routes.Domain()}
	if o.From != nil {
		if addr, err := a.Routes.Parse(o.From.Email); err != nil || addr.Namespace != ns.Name {
			return Email{}, &httpx.Error{Status: http.StatusForbidden, Code: "sender_not_in_namespace",
				Message: fmt.Sprintf("the sender must be an address of namespace %s (<name>@%s.%s)", ns.Name, ns.Name, a.Routes.Domain()),
				Fields:  []httpx.FieldError{{Field: "from.email", Detail: "is not an address of namespace " + ns.Name}}}
		}
		from = *o.From
	}
	rcpts, err := a.recipients(ctx, orgID, ns, o.draft)
	if err != nil {
		return Email{}, err
	}

	id := NewID()
	comp := composition{MessageID: id + "@" + a.Routes.Domain(), Date: a.Store.now(), From: from,
		ReplyTo: o.ReplyTo, To: o.To, Cc: o.Cc, Subject: o.Subject, InReplyTo: o.InReplyTo,
		References: o.References, HTML: o.HTML, Text: o.Text, Attachments: o.Attachments}
	source, err := build(comp)
	if err != nil {
		return Email{}, fmt.Errorf("build outbound message: %w", err)
	}
	if len(source) > MaxMessageBytes {
		return Email{}, httpx.Errorf(http.StatusRequestEntityTooLarge, "message_too_large",
			"the encoded message is %d bytes: at most %d (5 MiB)", len(source), MaxMessageBytes)
	}
	ne := NewEmail{ID: id, OrgID: orgID, NamespaceID: ns.ID, Type: o.Type, From: from, ReplyTo: o.ReplyTo,
		Subject: o.Subject, HTML: o.HTML, Text: o.Text, MessageID: "<" + comp.MessageID + ">",
		SourceEmailID: o.Source, Recipients: rcpts, Attachments: o.Attachments, Source: source}
	var e Email
	err = a.DB.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if e, err = a.Store.Create(ctx, tx, ne); err != nil {
			return err
		}
		_, err = EnqueueDelivery(ctx, a.Jobs, tx, e.ID)
		return err
	})
	return e, err
}

// recipients classifies the draft's recipients (the seed's sending rule 1):
// an address of the sending namespace is internal, delivered into its inbox;
// any other must be a verified destination of the organisation, else the
// request is 403 recipient_not_verified, naming each such field. An external
// address the organisation has suppressed (a hard bounce, a complaint) is
// kept, to be recorded suppressed without an attempt.
func (a *API) recipients(ctx context.Context, orgID string, ns tenant.Namespace, d draft) ([]NewRecipient, error) {
	var out []NewRecipient
	var refused []httpx.FieldError
	derived := d.Derived
	for _, l := range []struct {
		t     RecipientType
		field string
		as    []Address
	}{{To, "to", d.To}, {Cc, "cc", d.Cc}, {Bcc, "bcc", d.Bcc}} {
		for i, addr := range l.as {
			field := fmt.Sprintf("%s[%d]", l.field, i-derived)
			if l.t == To && i < derived {
				field = "to" // the reply's recipient, from the email replied to
			}
			routed, err := a.Routes.Parse(addr.Email)
			internal := err == nil && routed.Namespace == ns.Name
			var suppressed string
			if !internal {
				ok, err := a.Store.verifiedDestination(ctx, orgID, addr.Email)
				if err != nil {
					return nil, err
				}
				if !ok {
					refused = append(refused, httpx.FieldError{Field: field,
						Detail: fmt.Sprintf("names %s, which is neither an address of namespace %s nor a verified destination of the organisation", quote(addr.Email), ns.Name)})
				}
				if suppressed, err = a.Store.suppressedReason(ctx, orgID, addr.Email); err != nil {
					return nil, err
				}
			}
			out = append(out, NewRecipient{Type: l.t, Email: addr.Email, Name: addr.Name, Internal: internal, Suppressed: suppressed})
		}
		if l.t == To {
			derived = 0
		}
	}
	if len(refused) > 0 {
		return nil, &httpx.Error{Status: http.StatusForbidden, Code: "recipient_not_verified",
			Message: fmt.Sprintf("%d recipient(s) are not verified destinations: a message goes to addresses of namespace %s or to verified destinations", len(refused), ns.Name),
			Fields:  refused}
	}
	return out, nil
}

// listResponse is the answer of GET /api/emails/outbound.
type listResponse struct {
	TotalCount int         `json:"total_count"`
	Options    listOptions `json:"options"`
	Data       []ListItem  `json:"data"`
}

// listOptions echo the applied filter, defaults included; status and type are
// always there, null when not given, as the API description lists them.
type listOptions struct {
	Limit  int     `json:"limit"`
	Offset int     `json:"offset"`
	Status *Status `json:"status"`
	Type   *Type   `json:"type"`
}

// orNull is v, or nil (JSON null) for the zero value.
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ListOutboundHandler answers GET /api/emails/outbound: the organisation's
// outbound emails, newest first, in the list form. organisation_id, which a
// dashboard user must give, is checked against the key's organisation (a
// user's membership was checked by tenant.RequireAPI, which made the
// principal act for it).
func (a *API) ListOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	q := httpx.NewQuery(r)
	f := Filter{Limit: int(q.Int("limit", DefaultLimit, 1, 100)), Offset: int(q.Int("offset", 0, 0, -1))}
	status, _ := q.String("status", 0)
	typ, _ := q.String("type", 0)
	orgParam, _ := q.String("organisation_id", 0)
	c := checker{fields: q.Fields()}
	switch s := Status(status); s {
	case "", StatusQueued, StatusSending, StatusSent, StatusFailed:
		f.Status = s
	default:
		c.fail("status", "must be queued, sending, sent or failed")
	}
	switch t := Type(typ); t {
	case "", TypeNew, TypeReply, TypeForward:
		f.Type = t
	default:
		c.fail("type", "must be new, reply or forward")
	}
	if _, err := uuid.Parse(orgParam); orgParam != "" && err != nil {
		c.fail("organisation_id", "must be a UUID")
	}
	if orgParam == "" && tenant.PrincipalFrom(r.Context()).User != nil {
		c.fail("organisation_id", "is required for session-authenticated users")
	}
	if err := c.fields.Err(); err != nil {
		return err
	}
	org := tenant.OrgFrom(r.Context())
	if orgParam != "" && !strings.EqualFold(orgParam, org.ID) {
		return httpx.Errorf(http.StatusForbidden, "organisation_mismatch", "organisation_id is not the organisation of the API key")
	}
	items, total, err := a.Store.List(r.Context(), org.ID, f)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listResponse{TotalCount: total,
		Options: listOptions{Limit: f.Limit, Offset: f.Offset, Status: orNull(f.Status), Type: orNull(f.Type)}, Data: nonNil(items)})
	return nil
}

// emailParam is the {outboundEmailId} parameter; a malformed id is 404.
func emailParam(r *http.Request) (string, error) {
	id := chi.URLParam(r, "outboundEmailId")
	if _, err := uuid.Parse(id); err != nil {
		return "", httpx.NotFound("outbound email")
	}
	return strings.ToLower(id), nil
}

// GetOutboundHandler answers GET /api/emails/outbound/{outboundEmailId}: the
// detail form, for the organisation's own emails only.
func (a *API) GetOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := emailParam(r)
	if err != nil {
		return err
	}
	d, err := a.Store.Get(r.Context(), tenant.OrgFrom(r.Context()).ID, id)
	if errors.Is(err, ErrNotFound) {
		return httpx.NotFound("outbound email")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, d)
	return nil
}

// attachmentContent is the answer of the attachment endpoint.
type attachmentContent struct {
	ID            string `json:"id"`
	Filename      string `json:"filename"`
	ContentType   string `json:"content_type"`
	Size          int64  `json:"size"`
	ContentBase64 []byte `json:"content_base64"` // encoding/json writes bytes as base64
}

// OutboundAttachmentHandler answers GET
// /api/emails/outbound/{outboundEmailId}/attachments/{attachmentId}: the bytes
// as sent, base64, or 410 content_expired once they have expired (the
// metadata stays in the detail form).
func (a *API) OutboundAttachmentHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := emailParam(r)
	if err != nil {
		return err
	}
	attID := chi.URLParam(r, "attachmentId")
	if _, err := uuid.Parse(attID); err != nil {
		return httpx.NotFound("attachment")
	}
	at, data, err := a.Store.AttachmentContent(r.Context(), tenant.OrgFrom(r.Context()).ID, id, strings.ToLower(attID))
	switch {
	case errors.Is(err, ErrNotFound):
		return httpx.NotFound("attachment")
	case errors.Is(err, ErrContentExpired):
		return httpx.Errorf(http.StatusGone, "content_expired", "the attachment's content expired at %s; its metadata stays in the outbound email",
			httpx.Time(at.ContentExpiredAt))
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, attachmentContent{ID: at.ID, Filename: at.Filename, ContentType: at.ContentType,
		Size: at.Size, ContentBase64: nonNil(data)})
	return nil
}

// CancelOutboundHandler answers POST /api/emails/outbound/{outboundEmailId}/cancel
// (beyond the seed): the recipients no attempt has reached become cancelled,
// and the detail form is returned; 409 not_cancellable when there are none.
func (a *API) CancelOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := emailParam(r)
	if err != nil {
		return err
	}
	d, err := a.Store.Cancel(r.Context(), tenant.OrgFrom(r.Context()).ID, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return httpx.NotFound("outbound email")
	case errors.Is(err, ErrNotCancellable):
		return httpx.Errorf(http.StatusConflict, "not_cancellable",
			"no recipient can be cancelled: each has a final status or has had a delivery attempt")
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, d)
	return nil
}

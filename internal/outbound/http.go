package outbound

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/tenant"
)

// SendEmailHandler answers POST /api/emails/send?namespace=: Send, 202 with
// the summary form once the email is stored with its delivery job.
func (s *Service) SendEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var req SendRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return err
	}
	req.Namespace = r.URL.Query().Get("namespace")
	e, err := s.Send(r.Context(), tenant.PrincipalFrom(r.Context()), req)
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// ReplyToEmailHandler answers POST /api/emails/{emailId}/reply: Reply, 202
// with the summary form.
func (s *Service) ReplyToEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var req ReplyRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return err
	}
	req.EmailID = chi.URLParam(r, "emailId")
	e, err := s.Reply(r.Context(), tenant.PrincipalFrom(r.Context()), req)
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// ForwardEmailHandler answers POST /api/emails/{emailId}/forward: Forward,
// 202 with the summary form.
func (s *Service) ForwardEmailHandler(w http.ResponseWriter, r *http.Request) error {
	var req ForwardRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return err
	}
	req.EmailID = chi.URLParam(r, "emailId")
	e, err := s.Forward(r.Context(), tenant.PrincipalFrom(r.Context()), req)
	if err != nil {
		return err
	}
	return accepted(w, e)
}

// accepted answers a created email: 202, its summary form, and where its
// state can be followed (contract section 5).
func accepted(w http.ResponseWriter, e outstore.Email) error {
	w.Header().Set("Location", "/api/emails/outbound/"+e.ID)
	httpx.WriteJSON(w, http.StatusAccepted, e)
	return nil
}

// listResponse is the answer of GET /api/emails/outbound.
type listResponse struct {
	TotalCount int                 `json:"total_count"`
	Options    listOptions         `json:"options"`
	Data       []outstore.ListItem `json:"data"`
}

// listOptions echo the applied filter, defaults included; status and type are
// always there, null when not given, as the API description lists them.
type listOptions struct {
	Limit  int              `json:"limit"`
	Offset int              `json:"offset"`
	Status *outstore.Status `json:"status"`
	Type   *outstore.Type   `json:"type"`
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
func (s *Service) ListOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	q := httpx.NewQuery(r)
	f := outstore.Filter{Limit: int(q.Int("limit", outstore.DefaultLimit, 1, 100)), Offset: int(q.Int("offset", 0, 0, -1))}
	status, _ := q.String("status", 0)
	typ, _ := q.String("type", 0)
	orgParam, _ := q.String("organisation_id", 0)
	c := checker{fields: q.Fields()}
	switch s := outstore.Status(status); s {
	case "", outstore.StatusQueued, outstore.StatusSending, outstore.StatusSent, outstore.StatusFailed:
		f.Status = s
	default:
		c.fail("status", "must be queued, sending, sent or failed")
	}
	switch t := outstore.Type(typ); t {
	case "", outstore.TypeNew, outstore.TypeReply, outstore.TypeForward:
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
	items, total, err := s.Store.List(r.Context(), org.ID, f)
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
func (s *Service) GetOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := emailParam(r)
	if err != nil {
		return err
	}
	d, err := s.Store.Get(r.Context(), tenant.OrgFrom(r.Context()).ID, id)
	if errors.Is(err, outstore.ErrNotFound) {
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
func (s *Service) OutboundAttachmentHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := emailParam(r)
	if err != nil {
		return err
	}
	attID := chi.URLParam(r, "attachmentId")
	if _, err := uuid.Parse(attID); err != nil {
		return httpx.NotFound("attachment")
	}
	at, data, err := s.Store.AttachmentContent(r.Context(), tenant.OrgFrom(r.Context()).ID, id, strings.ToLower(attID))
	switch {
	case errors.Is(err, outstore.ErrNotFound):
		return httpx.NotFound("attachment")
	case errors.Is(err, outstore.ErrContentExpired):
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
// (beyond the seed): Cancel, 200 with the detail form; 409 not_cancellable
// when no recipient is left to cancel.
func (s *Service) CancelOutboundHandler(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Cancel(r.Context(), tenant.PrincipalFrom(r.Context()), CancelRequest{ID: chi.URLParam(r, "outboundEmailId")})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, d)
	return nil
}

// nonNil makes an empty list [] in JSON rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

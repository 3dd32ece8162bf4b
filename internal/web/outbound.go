package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// OutboundHandler answers GET /outbound: the organisation's outbound emails,
// newest first, filtered by status and type, a page at a time.
func (d *Dashboard) OutboundHandler(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := outstore.Filter{Limit: outstore.DefaultLimit, Status: outstore.Status(q.Get("status")), Type: outstore.Type(q.Get("type"))}
	switch f.Status {
	case "", outstore.StatusQueued, outstore.StatusSending, outstore.StatusSent, outstore.StatusFailed:
	default:
		return badRequest("status must be queued, sending, sent or failed.")
	}
	switch f.Type {
	case "", outstore.TypeNew, outstore.TypeReply, outstore.TypeForward:
	default:
		return badRequest("type must be new, reply or forward.")
	}
	f.Offset, _ = strconv.Atoi(q.Get("offset"))
	f.Offset = max(f.Offset, 0)
	org := tenant.OrgFrom(r.Context())
	items, total, err := d.Outbound.Store.List(r.Context(), org.ID, f)
	if err != nil {
		return err
	}
	ns, err := d.Tenants.ListNamespaces(r.Context(), org.ID)
	if err != nil {
		return err
	}
	page := func(off int) string {
		v := url.Values{}
		if f.Status != "" {
			v.Set("status", string(f.Status))
		}
		if f.Type != "" {
			v.Set("type", string(f.Type))
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		return "/outbound?" + v.Encode()
	}
	data := map[string]any{"Title": "Outbound email", "Nav": "outbound", "Items": items, "Total": total, "Status": string(f.Status),
		"Type": string(f.Type), "Namespaces": ns, "MailDomain": d.MailDomain, "Offset": f.Offset}
	if f.Offset > 0 {
		data["PrevURL"] = page(max(0, f.Offset-f.Limit))
	}
	if f.Offset+len(items) < total {
		data["NextURL"] = page(f.Offset + f.Limit)
	}
	return d.render(w, r, "outbound", data)
}

// OutboundEmailHandler answers GET /outbound/{id}: recipients, their states
// and the event timeline.
func (d *Dashboard) OutboundEmailHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if _, err := uuid.Parse(id); err != nil {
		return notFound("Outbound email")
	}
	e, err := d.Outbound.Store.Get(r.Context(), tenant.OrgFrom(r.Context()).ID, strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, outstore.ErrNotFound) {
		return notFound("Outbound email")
	}
	if err != nil {
		return err
	}
	title := "Outbound email: " + e.Subject
	if e.Subject == "" {
		title = "Outbound email (no subject)"
	}
	return d.render(w, r, "outboundemail", map[string]any{"Title": title, "Nav": "outbound", "E": e})
}

// splitAddrs reads a form's comma-separated addresses as the API's list.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// SendHandler answers POST /outbound/send: a new email from a namespace,
// through outbound.Service.Send and its sending rules, as the API's send.
// The from field is always given: left empty, it is an address the rules
// refuse, not the namespace's default sender.
func (d *Dashboard) SendHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := r.PostForm
	from := strings.TrimSpace(f.Get("from"))
	e, err := d.Outbound.Send(r.Context(), tenant.PrincipalFrom(r.Context()), outbound.SendRequest{
		Namespace: f.Get("namespace"), From: &outbound.AddressInput{Email: &from},
		To: splitAddrs(f.Get("to")), Cc: splitAddrs(f.Get("cc")), Subject: f.Get("subject"), HTML: f.Get("html"), Text: f.Get("text")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/outbound/"+e.ID, "Email accepted for sending.")
}

// ReplyHandler answers POST /emails/{emailId}/reply: a reply to the email,
// through outbound.Service.Reply.
func (d *Dashboard) ReplyHandler(w http.ResponseWriter, r *http.Request) error {
	src, from, err := d.respondForm(w, r)
	if err != nil {
		return err
	}
	e, err := d.Outbound.Reply(r.Context(), tenant.PrincipalFrom(r.Context()), outbound.ReplyRequest{
		EmailID: src.ID, From: from, Text: r.PostForm.Get("text")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/outbound/"+e.ID, "Email accepted for sending.")
}

// ForwardHandler answers POST /emails/{emailId}/forward: the email forwarded,
// through outbound.Service.Forward.
func (d *Dashboard) ForwardHandler(w http.ResponseWriter, r *http.Request) error {
	src, from, err := d.respondForm(w, r)
	if err != nil {
		return err
	}
	e, err := d.Outbound.Forward(r.Context(), tenant.PrincipalFrom(r.Context()), outbound.ForwardRequest{
		EmailID: src.ID, From: from, To: splitAddrs(r.PostForm.Get("to")), Text: r.PostForm.Get("text")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/outbound/"+e.ID, "Email accepted for sending.")
}

// respondForm is the start of the reply and forward forms: the email must be
// one the user's organisation can see (else the page is not found), and the
// form readable; from is its sender field.
func (d *Dashboard) respondForm(w http.ResponseWriter, r *http.Request) (src inbox.StoredEmail, from *outbound.AddressInput, err error) {
	src, _, err = d.visibleEmail(r)
	if err != nil {
		return inbox.StoredEmail{}, nil, err
	}
	if err := parseForm(w, r); err != nil {
		return inbox.StoredEmail{}, nil, err
	}
	addr := strings.TrimSpace(r.PostForm.Get("from"))
	return src, &outbound.AddressInput{Email: &addr}, nil
}

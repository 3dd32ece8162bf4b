package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// OutboundHandler answers GET /outbound: the organisation's outbound emails,
// newest first, filtered by status and type, a page at a time.
func (d *Dashboard) OutboundHandler(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := outbound.Filter{Limit: outbound.DefaultLimit, Status: outbound.Status(q.Get("status")), Type: outbound.Type(q.Get("type"))}
	switch f.Status {
	case "", outbound.StatusQueued, outbound.StatusSending, outbound.StatusSent, outbound.StatusFailed:
	default:
		return badRequest("status must be queued, sending, sent or failed.")
	}
	switch f.Type {
	case "", outbound.TypeNew, outbound.TypeReply, outbound.TypeForward:
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
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, outbound.ErrNotFound) {
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
// through the API's send handler and its sending rules.
func (d *Dashboard) SendHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := r.PostForm
	body := map[string]any{"from": map[string]string{"email": strings.TrimSpace(f.Get("from"))}, "subject": f.Get("subject")}
	if to := splitAddrs(f.Get("to")); to != nil {
		body["to"] = to
	}
	if cc := splitAddrs(f.Get("cc")); cc != nil {
		body["cc"] = cc
	}
	if t := f.Get("text"); t != "" {
		body["text"] = t
	}
	if h := f.Get("html"); h != "" {
		body["html"] = h
	}
	var sent struct {
		ID string `json:"id"`
	}
	target := "/api/emails/send?namespace=" + url.QueryEscape(f.Get("namespace"))
	if err := apiCall(r, d.Outbound.SendEmailHandler, http.MethodPost, target, nil, body, &sent); err != nil {
		return err
	}
	return redirect(w, r, "/outbound/"+sent.ID, "Email accepted for sending.")
}

// ReplyHandler answers POST /emails/{emailId}/reply and ForwardHandler
// POST /emails/{emailId}/forward: through the API's handlers.
func (d *Dashboard) ReplyHandler(w http.ResponseWriter, r *http.Request) error {
	return d.respond(w, r, "reply", d.Outbound.ReplyToEmailHandler)
}

// ForwardHandler answers POST /emails/{emailId}/forward.
func (d *Dashboard) ForwardHandler(w http.ResponseWriter, r *http.Request) error {
	return d.respond(w, r, "forward", d.Outbound.ForwardEmailHandler)
}

func (d *Dashboard) respond(w http.ResponseWriter, r *http.Request, kind string, h func(http.ResponseWriter, *http.Request) error) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := r.PostForm
	body := map[string]any{"from": map[string]string{"email": strings.TrimSpace(f.Get("from"))}}
	if to := splitAddrs(f.Get("to")); to != nil && kind == "forward" {
		body["to"] = to
	}
	if t := f.Get("text"); t != "" {
		body["text"] = t
	}
	var sent struct {
		ID string `json:"id"`
	}
	if err := apiCall(r, h, http.MethodPost, "/api/emails/"+e.ID+"/"+kind, map[string]string{"emailId": e.ID}, body, &sent); err != nil {
		return err
	}
	return redirect(w, r, "/outbound/"+sent.ID, "Email accepted for sending.")
}

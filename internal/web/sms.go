package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/tenant"
)

// SMSHandler answers GET /sms: the organisation's numbers.
func (d *Dashboard) SMSHandler(w http.ResponseWriter, r *http.Request) error {
	ns, err := d.SMS.Service.Numbers(r.Context(), tenant.OrgFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	return d.render(w, r, "sms", map[string]any{"Title": "SMS numbers", "Nav": "sms", "Numbers": ns})
}

// number is the {phone} of the organisation's, or 404.
func (d *Dashboard) number(r *http.Request) (sms.Number, error) {
	phone, err := sms.NormalizePhone(chi.URLParam(r, "phone"))
	if err != nil {
		return sms.Number{}, notFound("SMS number")
	}
	n, err := d.SMS.Service.NumberByPhone(r.Context(), phone)
	if errors.Is(err, sms.ErrNotFound) || err == nil && n.OrgID != tenant.OrgFrom(r.Context()).ID {
		return sms.Number{}, notFound("SMS number")
	}
	return n, err
}

func (d *Dashboard) messagesData(r *http.Request) (map[string]any, error) {
	n, err := d.number(r)
	if err != nil {
		return nil, err
	}
	off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	if off < 0 {
		off = 0
	}
	res, err := d.SMS.Service.Search(r.Context(), sms.Query{NumberID: n.ID, Limit: sms.DefaultLimit, Offset: off})
	if err != nil {
		return nil, err
	}
	data := map[string]any{"Title": "SMS messages to " + n.Phone, "Nav": "sms", "Number": n, "Total": res.Total, "Messages": res.Messages, "Offset": off}
	if off > 0 {
		data["PrevURL"] = "/sms/" + n.Phone + "?offset=" + strconv.Itoa(max(0, off-sms.DefaultLimit))
	}
	if off+len(res.Messages) < res.Total {
		data["NextURL"] = "/sms/" + n.Phone + "?offset=" + strconv.Itoa(off+sms.DefaultLimit)
	}
	if off == 0 {
		data["RowsURL"] = "/sms/" + n.Phone + "/rows"
	}
	return data, nil
}

// MessagesHandler answers GET /sms/{phone}: the number's messages, newest
// first, new ones appearing live; and the form to send a virtual SMS.
func (d *Dashboard) MessagesHandler(w http.ResponseWriter, r *http.Request) error {
	data, err := d.messagesData(r)
	if err != nil {
		return err
	}
	return d.render(w, r, "messages", data)
}

// MessageRowsHandler answers GET /sms/{phone}/rows, for the live page.
func (d *Dashboard) MessageRowsHandler(w http.ResponseWriter, r *http.Request) error {
	data, err := d.messagesData(r)
	if err != nil {
		return err
	}
	return d.fragment(w, r, "smsrows", data)
}

// SMSEventsHandler answers GET /sms/{phone}/events: an event "sms" each time
// the number receives a message.
func (d *Dashboard) SMSEventsHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.number(r)
	if err != nil {
		return err
	}
	return d.stream(w, r, sms.Topic(n.ID), "sms")
}

// VirtualSMSHandler answers POST /sms/{phone}/virtual: a message received on
// the number as if a carrier had delivered it (sms.SendVirtual, as the API's
// POST /api/sms/virtual).
func (d *Dashboard) VirtualSMSHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.number(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	_, err = d.SMS.Service.SendVirtual(r.Context(), tenant.PrincipalFrom(r.Context()),
		sms.VirtualRequest{ToNumber: n.Phone, FromNumber: r.PostForm.Get("from_number"), Body: r.PostForm.Get("body")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/sms/"+n.Phone, "Message received.")
}

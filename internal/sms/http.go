package sms

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/notify/notifyhttp"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// maxDateLength bounds the from_date and to_date parameters (an RFC 3339 time
// with nanoseconds and an offset is 35 characters).
const maxDateLength = 64

// API serves the SMS endpoints of the seed and the provider webhook.
type API struct {
	Service  *Service
	Notifier notify.Notifier
	WaitHold time.Duration
	// Degraded, when set, is asked every notify.RecheckInterval while a search is held;
	// when it reports true (cross-replica wake-ups may be lost) the search is
	// re-run without waiting for a wake-up.
	Degraded func() bool
	// TwilioAuthToken verifies X-Twilio-Signature on the inbound webhook; "" turns
	// the webhook off (404).
	TwilioAuthToken string
	// PublicURL is the base URL the provider calls, no trailing slash: the webhook
	// signature covers the full URL the provider requested.
	PublicURL func() string
}

// ListNumbersHandler answers GET /api/sms/numbers: the organisation's numbers in
// every status, oldest first.
func (a *API) ListNumbersHandler(w http.ResponseWriter, r *http.Request) error {
	ns, err := a.Service.Numbers(r.Context(), tenant.OrgFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		TotalCount int      `json:"total_count"`
		Data       []Number `json:"data"`
	}{len(ns), ns})
	return nil
}

// numberParam resolves the {phone_number} path parameter, written with or
// without '+' (also as %2B), to a number of the request's organisation: 404
// otherwise, never revealing another organisation's number.
func (a *API) numberParam(r *http.Request) (Number, error) {
	raw := chi.URLParam(r, "phone_number")
	phone, err := NormalizePhone(raw)
	if err != nil {
		return Number{}, httpx.Invalid("phone_number", err.Error())
	}
	n, err := a.Service.NumberByPhone(r.Context(), phone)
	if errors.Is(err, ErrNotFound) || (err == nil && n.OrgID != tenant.OrgFrom(r.Context()).ID) {
		return Number{}, httpx.Errorf(http.StatusNotFound, "sms_number_not_found", "sms number %s not found", phone)
	}
	return n, err
}

// virtualSMSRequest is the body of POST /api/sms/virtual: VirtualRequest
// with the API's field names. An absent or null field is "", which
// SendVirtual refuses as required.
type virtualSMSRequest struct {
	FromNumber string `json:"from_number"`
	ToNumber   string `json:"to_number"`
	Body       string `json:"body"`
}

// VirtualSMSHandler answers POST /api/sms/virtual (SendVirtual): 201 with the
// message once it is committed.
func (a *API) VirtualSMSHandler(w http.ResponseWriter, r *http.Request) error {
	var req virtualSMSRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return err
	}
	m, err := a.Service.SendVirtual(r.Context(), tenant.PrincipalFrom(r.Context()), VirtualRequest(req))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"data": m})
	return nil
}

type searchOptions struct {
	Limit      int64   `json:"limit"`
	Offset     int64   `json:"offset"`
	Body       *string `json:"body,omitempty"`
	FromNumber *string `json:"from_number,omitempty"`
	Direction  *string `json:"direction,omitempty"`
	FromDate   *string `json:"from_date,omitempty"`
	ToDate     *string `json:"to_date,omitempty"`
	Wait       *bool   `json:"wait,omitempty"`
}

type searchResponse struct {
	TotalCount int           `json:"total_count"`
	Options    searchOptions `json:"options"`
	Data       []Message     `json:"data"`
}

// ParseSearch reads and validates the message search query string; every bad
// parameter is reported at once. options echoes the applied values: defaults
// included, from_number normalised, dates in the contract's format.
func ParseSearch(r *http.Request) (q Query, options searchOptions, wait bool, err error) {
	qp := httpx.NewQuery(r)
	var fields problem.Fields
	bad := fields.Add
	options.Limit = qp.Int("limit", DefaultLimit, 1, MaxLimit)
	options.Offset = qp.Int("offset", 0, 0, -1)
	q.Limit, q.Offset = int(options.Limit), int(options.Offset)
	if v, ok := qp.String("body", MaxBodyRunes); ok && v != "" {
		q.Body, options.Body = v, &v
	}
	if v, ok := qp.String("from_number", maxSenderLength); ok && v != "" {
		prefixes, echo, ok := fromPrefixes(v)
		if !ok {
			bad("from_number", "must be the start of a phone number such as +1555, or of a sender id")
		} else {
			q.FromPrefixes, options.FromNumber = prefixes, &echo
		}
	}
	if v, ok := qp.String("direction", 16); ok && v != "" {
		if v != DirectionInbound && v != DirectionOutbound {
			bad("direction", "must be inbound or outbound")
		} else {
			q.Direction, options.Direction = v, &v
		}
	}
	date := func(name string, dst **int64, echo **string) {
		v, ok := qp.String(name, maxDateLength)
		if !ok || v == "" {
			return
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil && strings.Contains(v, " ") {
			// A '+' of a time zone offset sent unencoded arrives as a space.
			t, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(v, " ", "+"))
		}
		if err != nil {
			bad(name, "must be an RFC 3339 date-time such as 2026-11-22T03:23:50.123Z")
			return
		}
		ms := t.UnixMilli()
		s := httpx.TimeMillis(ms)
		*dst, *echo = &ms, &s
	}
	date("from_date", &q.FromMs, &options.FromDate)
	date("to_date", &q.ToMs, &options.ToDate)
	wait, present := qp.Bool("wait")
	if present {
		options.Wait = &wait
	}
	return q, options, wait, append(qp.Fields(), fields...).Err()
}

// SearchMessagesHandler answers GET /api/sms/{phone_number}/messages. With
// wait=true and no match, the request is held until a matching message is
// committed (answered at once) or the hold ends (307 to the identical URL; the
// client repeats), exactly as the inbox search.
func (a *API) SearchMessagesHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := a.numberParam(r)
	if err != nil {
		return err
	}
	q, opt, wait, err := ParseSearch(r)
	if err != nil {
		return err
	}
	q.NumberID = n.ID
	search := func(ctx context.Context) (searchResponse, bool, error) {
		res, err := a.Service.Search(ctx, q)
		return searchResponse{TotalCount: res.Total, Options: opt, Data: res.Messages}, res.Total > 0, err
	}
	return notifyhttp.Answer(w, r, wait, a.Notifier, q.want(), notify.Policy{Hold: a.WaitHold, Degraded: a.Degraded}, search)
}

// LatestMessageHandler answers GET /api/sms/{phone_number}/latest; 404 when the
// number has no unexpired message.
func (a *API) LatestMessageHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := a.numberParam(r)
	if err != nil {
		return err
	}
	m, err := a.Service.Latest(r.Context(), n.ID)
	if errors.Is(err, ErrNotFound) {
		return httpx.Errorf(http.StatusNotFound, "no_messages", "sms number %s has no messages", n.Phone)
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": m})
	return nil
}

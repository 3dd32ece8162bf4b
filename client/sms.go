package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// SMSNumber is an SMS number of the organisation.
type SMSNumber struct {
	ID             string    `json:"id"`
	OrganisationID string    `json:"organisation_id"`
	Status         string    `json:"status"` // requested, active or disabled; only active numbers receive
	Country        string    `json:"country"`
	PhoneNumber    string    `json:"phone_number,omitempty"` // E.164; "" while requested
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	IsTestNumber   bool      `json:"is_test_number"`
}

// SMSMessage is one message of a number.
type SMSMessage struct {
	ID                string    `json:"id"`
	SMSPhoneNumberID  string    `json:"sms_phone_number_id"`
	Body              string    `json:"body"`
	FromNumber        string    `json:"from_number"`
	ToNumber          string    `json:"to_number"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	CreatedAt         time.Time `json:"created_at"`
	Direction         string    `json:"direction"` // inbound or outbound
	// Links and Codes are the body's links and one-time codes, best first, as
	// on an Email.
	Links []Link   `json:"links"`
	Codes []string `json:"codes"`
}

// SMSQuery is a search of a number's messages. Zero fields are left out: the
// server's defaults apply (20 messages from the newest, both directions).
type SMSQuery struct {
	Limit      int       // 1 to 100
	Offset     int       //
	Body       string    // the body contains this (case-insensitive)
	FromNumber string    // the sender starts with this (+44, 44 and %2B44 all mean +44)
	Direction  string    // inbound or outbound
	Since      time.Time // created at or after
	Until      time.Time // created at or before
	// Wait holds the search until at least one message matches (see
	// WaitForSMS).
	Wait bool
}

func (q SMSQuery) values() url.Values {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	setInt(v, "offset", q.Offset)
	setString(v, "body", q.Body)
	setString(v, "from_number", q.FromNumber)
	setString(v, "direction", q.Direction)
	if !q.Since.IsZero() {
		v.Set("from_date", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("to_date", q.Until.UTC().Format(time.RFC3339Nano))
	}
	if q.Wait {
		v.Set("wait", "true")
	}
	return v
}

// SMSSearchOptions echoes the search the server applied.
type SMSSearchOptions struct {
	Limit      int     `json:"limit"`
	Offset     int     `json:"offset"`
	Body       *string `json:"body,omitempty"`
	FromNumber *string `json:"from_number,omitempty"`
	Direction  *string `json:"direction,omitempty"`
	FromDate   *string `json:"from_date,omitempty"`
	ToDate     *string `json:"to_date,omitempty"`
	Wait       *bool   `json:"wait,omitempty"`
}

// SMSPage is one page of a message search, newest first.
type SMSPage struct {
	TotalCount int              `json:"total_count"`
	Options    SMSSearchOptions `json:"options"`
	Data       []SMSMessage     `json:"data"`
}

// VirtualSMS is an inbound message to store on a number without a carrier.
type VirtualSMS struct {
	FromNumber string `json:"from_number"`
	ToNumber   string `json:"to_number"` // an active number of the organisation
	Body       string `json:"body"`      // 1 to 1600 characters
}

// SMSNumbers lists the organisation's numbers in every status (GET /api/sms/numbers).
func (c *Client) SMSNumbers(ctx context.Context) ([]SMSNumber, error) {
	var out struct {
		Data []SMSNumber `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/sms/numbers"}, &out)
	return out.Data, err
}

// SearchSMS searches a number's messages (GET /api/sms/{phone_number}/messages);
// phone is E.164, with or without its +.
func (c *Client) SearchSMS(ctx context.Context, phone string, q SMSQuery) (SMSPage, error) {
	var out SMSPage
	target := c.url("/api/sms/"+seg(phone)+"/messages", q.values())
	if q.Wait {
		return out, c.follow(ctx, target, &out)
	}
	resp, err := c.send(ctx, http.MethodGet, target, nil)
	if err != nil {
		return out, err
	}
	return out, decode(resp, &out)
}

// LatestSMS returns the number's newest message (GET /api/sms/{phone_number}/latest);
// a number without messages is an *Error with code "no_messages".
func (c *Client) LatestSMS(ctx context.Context, phone string) (SMSMessage, error) {
	var out struct {
		Data SMSMessage `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/sms/" + seg(phone) + "/latest"}, &out)
	return out.Data, err
}

// SendVirtualSMS stores an inbound message on an active number of the
// organisation, as if a carrier had delivered it (POST /api/sms/virtual), and
// returns it once searches can find it.
func (c *Client) SendVirtualSMS(ctx context.Context, m VirtualSMS) (SMSMessage, error) {
	var out struct {
		Data SMSMessage `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/sms/virtual", body: m}, &out)
	return out.Data, err
}

// SMSFilter chooses the message WaitForSMS waits for. Empty fields match
// anything, except Since.
type SMSFilter struct {
	Body string // the body contains this (case-insensitive)
	From string // the sender starts with this
	// Since: created at or after. Zero is RecentWindow before the call, as
	// for email; time.Unix(0, 0) matches messages of any age.
	Since time.Time
}

// WaitForSMS returns the newest message of the number that matches f, waiting
// until one arrives, as WaitForEmail does for email: by default only messages
// received at most RecentWindow before the call count.
func (c *Client) WaitForSMS(ctx context.Context, phone string, f SMSFilter) (SMSMessage, error) {
	page, err := c.SearchSMS(ctx, phone, SMSQuery{Limit: 1, Body: f.Body, FromNumber: f.From, Since: since(f.Since), Wait: true})
	if err != nil {
		return SMSMessage{}, waitError(ctx, err)
	}
	if len(page.Data) == 0 {
		return SMSMessage{}, fmt.Errorf("catchbox: wait answered %d matches and no message", page.TotalCount)
	}
	return page.Data[0], nil
}

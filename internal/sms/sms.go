// Package sms owns SMS numbers and their messages: the numbers an organisation
// holds (requested, active or disabled), the messages they receive, either
// virtually (POST /api/sms/virtual, for tests that need no carrier) or for real
// from a provider's inbound webhook (Twilio's format), and the search over them,
// with the same wait-until-it-arrives behaviour as the inbox.
//
// Numbers are E.164 everywhere they are stored or returned; NormalizePhone is
// the one place that reads the ways people and URLs write them. Messages expire
// after the server's SMS retention; Reap deletes them.
package sms

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Status is an SMS number's state (the seed's SmsNumber status).
type Status string

// The statuses of a number. A requested number has no phone number yet; only an
// active one receives messages.
const (
	StatusRequested Status = "requested"
	StatusActive    Status = "active"
	StatusDisabled  Status = "disabled"
)

// Directions of a message. Every message Catchbox stores today is inbound; the
// filter accepts both because the seed names both.
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// DefaultRetention is how long a message is kept when the server sets nothing
// (CATCHBOX_SMS_RETENTION).
const DefaultRetention = 7 * 24 * time.Hour

// MaxBodyRunes caps a virtual message's body: 1600 characters is the longest
// concatenated SMS the large providers deliver (Twilio's documented limit).
const MaxBodyRunes = 1600

// Errors of the service; the HTTP layer and the admin command map them.
var (
	ErrNotFound   = store.ErrNotFound
	ErrInactive   = errors.New("sms number is not active")
	ErrPhoneTaken = errors.New("phone number already belongs to an SMS number")
)

// Number is an SMS number of an organisation. Phone is "" while the number is
// only requested.
type Number struct {
	ID        string
	OrgID     string
	Status    Status
	Country   string
	Phone     string
	IsTest    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

type numberJSON struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	Status         Status `json:"status"`
	Country        string `json:"country"`
	PhoneNumber    string `json:"phone_number,omitempty"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
	IsTestNumber   bool   `json:"is_test_number"`
}

// MarshalJSON writes the seed's SmsNumber resource, so the API and the admin
// command's --json print the same object.
func (n Number) MarshalJSON() ([]byte, error) {
	return json.Marshal(numberJSON{ID: n.ID, OrganisationID: n.OrgID, Status: n.Status, Country: n.Country,
		PhoneNumber: n.Phone, CreatedAt: httpx.Time(n.CreatedAt), UpdatedAt: httpx.Time(n.UpdatedAt), IsTestNumber: n.IsTest})
}

// Message is one SMS received on (or, in future, sent from) a number. Links
// and Codes, beyond the seed's fields, are the body's links and one-time codes,
// best first (message.Extract), for the test that waits for a sign-in SMS.
// They are read from the body whenever a message is read: a body has at most
// MaxBodyRunes characters, and reading it costs less than the row it comes
// from (docs/benchmarks.md), so nothing is stored for them.
type Message struct {
	ID                string
	NumberID          string
	Body              string
	From              string
	To                string
	ProviderMessageID string // "" for virtual messages
	Direction         string
	CreatedAt         time.Time
	Links             []message.Link
	Codes             []string
}

type messageJSON struct {
	ID                string         `json:"id"`
	SmsPhoneNumberID  string         `json:"sms_phone_number_id"`
	Body              string         `json:"body"`
	FromNumber        string         `json:"from_number"`
	ToNumber          string         `json:"to_number"`
	ProviderMessageID string         `json:"provider_message_id,omitempty"`
	CreatedAt         string         `json:"created_at"`
	Direction         string         `json:"direction"`
	Links             []message.Link `json:"links"`
	Codes             []string       `json:"codes"`
}

// MarshalJSON writes the seed's SmsMessage resource, with links and codes
// always present.
func (m Message) MarshalJSON() ([]byte, error) {
	if m.Links == nil || m.Codes == nil {
		m.readBody()
	}
	return json.Marshal(messageJSON{ID: m.ID, SmsPhoneNumberID: m.NumberID, Body: m.Body, FromNumber: m.From,
		ToNumber: m.To, ProviderMessageID: m.ProviderMessageID, CreatedAt: httpx.Time(m.CreatedAt), Direction: m.Direction,
		Links: m.Links, Codes: m.Codes})
}

// readBody sets the links and codes of the body.
func (m *Message) readBody() { m.Links, m.Codes = message.Extract("", m.Body, "") }

// Topic is the notify topic published when a number receives a message; held
// searches of the number subscribe to it.
func Topic(numberID string) string { return "sms:" + numberID }

// Service stores numbers and messages and searches them.
type Service struct {
	db        *store.DB
	notifier  notify.Notifier
	retention time.Duration
	now       func() time.Time
	events    Events
}

// EventReceived is the type of the event written for every stored message.
const EventReceived = "sms.received"

// Events receives the package's events in the transaction of their cause
// (webhook.Service writes them to its outbox). It is defined here, where
// events are emitted, so that sms needs nothing of whoever takes them.
type Events interface {
	// Emit writes an event of the organisation; namespace is "" for none.
	Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error
}

// NewService returns the SMS service over db. notifier, which may be nil (the
// admin command), is woken after each stored message; retention is how long a
// message is kept (DefaultRetention when not positive); events, which may be
// nil, receives an sms.received event for each stored message, in its
// transaction.
func NewService(db *store.DB, notifier notify.Notifier, retention time.Duration, events Events) *Service {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Service{db: db, notifier: notifier, retention: retention, now: time.Now, events: events}
}

// SetClock replaces the clock (tests).
func (s *Service) SetClock(now func() time.Time) { s.now = now }

// NumberSpec describes a number to add. Status "" means active when a phone
// number is given and requested otherwise; Country "" is derived from the phone
// number's calling code.
type NumberSpec struct {
	Phone   string
	Country string
	Status  Status
	IsTest  bool
}

// AddNumber adds a number to the organisation. A requested number must not have
// a phone number and must name its country (the country the number is requested
// in); an active one must have a phone number. A phone number belongs to one
// number only, across organisations, because inbound messages are routed by it.
func (s *Service) AddNumber(ctx context.Context, orgID string, spec NumberSpec) (Number, error) {
	n := Number{ID: tenant.NewID(), OrgID: orgID, Status: spec.Status, Country: strings.ToUpper(strings.TrimSpace(spec.Country)), IsTest: spec.IsTest}
	if spec.Phone != "" {
		p, err := NormalizePhone(spec.Phone)
		if err != nil {
			return Number{}, fmt.Errorf("phone %q %w", spec.Phone, err)
		}
		n.Phone = p
	}
	switch n.Status {
	case "":
		n.Status = StatusRequested
		if n.Phone != "" {
			n.Status = StatusActive
		}
	case StatusRequested, StatusActive, StatusDisabled:
	default:
		return Number{}, fmt.Errorf("status %q: must be requested, active or disabled", spec.Status)
	}
	if n.Status == StatusRequested && n.Phone != "" {
		return Number{}, errors.New("a requested number has no phone number yet: leave out the phone or choose another status")
	}
	if n.Status == StatusActive && n.Phone == "" {
		return Number{}, errors.New("an active number needs a phone number")
	}
	if n.Country == "" && n.Phone != "" {
		n.Country = countryOf(n.Phone)
	}
	if n.Country == "" {
		return Number{}, errors.New("country is required (an ISO 3166-1 alpha-2 code such as US) when it cannot be derived from the phone number")
	}
	if !validCountry(n.Country) {
		return Number{}, fmt.Errorf("country %q: must be an ISO 3166-1 alpha-2 code such as US", spec.Country)
	}
	now := s.now().UnixMilli()
	n.CreatedAt, n.UpdatedAt = time.UnixMilli(now), time.UnixMilli(now)
	var phone any
	if n.Phone != "" {
		phone = n.Phone
	}
	_, err := s.db.Exec(ctx, `INSERT INTO sms_numbers (id, org_id, status, country, phone_number, is_test_number, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, n.ID, n.OrgID, string(n.Status), n.Country, phone, n.IsTest, now, now)
	if store.IsUniqueViolation(err) {
		return Number{}, fmt.Errorf("%s: %w", n.Phone, ErrPhoneTaken)
	}
	if err != nil {
		return Number{}, fmt.Errorf("add sms number: %w", err)
	}
	return n, nil
}

const numberColumns = "id, org_id, status, country, phone_number, is_test_number, created_at, updated_at"

func scanNumber(row interface{ Scan(...any) error }) (Number, error) {
	var n Number
	var status string
	var phone sql.NullString
	var created, updated int64
	err := row.Scan(&n.ID, &n.OrgID, &status, &n.Country, &phone, &n.IsTest, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Number{}, ErrNotFound
	}
	if err != nil {
		return Number{}, fmt.Errorf("read sms number: %w", err)
	}
	n.Status, n.Phone = Status(status), phone.String
	n.CreatedAt, n.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return n, nil
}

// Numbers lists the organisation's numbers in every status, oldest first.
func (s *Service) Numbers(ctx context.Context, orgID string) ([]Number, error) {
	rows, err := s.db.Query(ctx, "SELECT "+numberColumns+" FROM sms_numbers WHERE org_id = ? ORDER BY created_at, id", orgID)
	if err != nil {
		return nil, fmt.Errorf("list sms numbers: %w", err)
	}
	defer rows.Close()
	out := []Number{}
	for rows.Next() {
		n, err := scanNumber(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// NumberByPhone returns the number holding an E.164 phone number, whichever
// organisation owns it (callers check ownership).
func (s *Service) NumberByPhone(ctx context.Context, phone string) (Number, error) {
	return scanNumber(s.db.QueryRow(ctx, "SELECT "+numberColumns+" FROM sms_numbers WHERE phone_number = ?", phone))
}

// Inbound is a message arriving on a number.
type Inbound struct {
	From              string // E.164, or a provider's short code or sender id
	Body              string
	ProviderMessageID string // "" for virtual messages
}

// Receive stores an inbound message on an active number and wakes the searches
// held on it. It returns once the message is committed. A provider message id
// already stored on the number is not stored again: the stored message is
// returned with created false, so a retried webhook is idempotent.
func (s *Service) Receive(ctx context.Context, n Number, in Inbound) (m Message, created bool, err error) {
	if n.Status != StatusActive || n.Phone == "" {
		return Message{}, false, ErrInactive
	}
	if !utf8.ValidString(in.Body) {
		in.Body = strings.ToValidUTF8(in.Body, "\uFFFD")
	}
	now := s.now().UnixMilli()
	m = Message{ID: tenant.NewID(), NumberID: n.ID, Body: in.Body, From: in.From, To: n.Phone,
		ProviderMessageID: in.ProviderMessageID, Direction: DirectionInbound, CreatedAt: time.UnixMilli(now)}
	m.readBody()
	var provider any
	if in.ProviderMessageID != "" {
		provider = in.ProviderMessageID
	}
	var added int64
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, `INSERT INTO sms_messages
			(id, number_id, direction, from_number, to_number, body, body_fold, provider_message_id, created_ms, expires_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (number_id, provider_message_id) DO NOTHING`,
			m.ID, m.NumberID, m.Direction, m.From, m.To, m.Body, strings.ToLower(m.Body), provider, now, now+s.retention.Milliseconds())
		if err != nil {
			return err
		}
		if added, err = res.RowsAffected(); err != nil || added == 0 {
			return err
		}
		if s.events != nil {
			if err := s.events.Emit(ctx, tx, n.OrgID, "", EventReceived, m); err != nil {
				return err
			}
		}
		if s.notifier == nil {
			return nil
		}
		return s.notifier.AnnounceEvents(ctx, tx, m.arrival())
	})
	if err != nil {
		return Message{}, false, fmt.Errorf("store sms message: %w", err)
	}
	if added == 0 {
		m, err := scanMessage(s.db.QueryRow(ctx, "SELECT "+messageColumns+
			" FROM sms_messages WHERE number_id = ? AND provider_message_id = ?", n.ID, in.ProviderMessageID))
		return m, false, err
	}
	if s.notifier != nil {
		s.notifier.PublishEvents(context.WithoutCancel(ctx), m.arrival())
	}
	return m, true, nil
}

const messageColumns = "id, number_id, body, from_number, to_number, provider_message_id, direction, created_ms"

func scanMessage(row interface{ Scan(...any) error }) (Message, error) {
	var m Message
	var provider sql.NullString
	var created int64
	err := row.Scan(&m.ID, &m.NumberID, &m.Body, &m.From, &m.To, &provider, &m.Direction, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("read sms message: %w", err)
	}
	m.ProviderMessageID, m.CreatedAt = provider.String, time.UnixMilli(created)
	m.readBody()
	return m, nil
}

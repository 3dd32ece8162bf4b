package sms

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// VirtualRequest is a message to receive on one of the organisation's
// numbers as if a carrier had delivered it. Phone numbers are read as
// NormalizePhone reads them ("+44 7700 900 123", "447700900123").
type VirtualRequest struct {
	FromNumber string
	ToNumber   string // the organisation's active number
	Body       string // at most MaxBodyRunes characters
}

// SendVirtual stores a message on an active number of the principal's
// organisation, as if a carrier had delivered it, and returns it once it is
// committed (searches held on the number are woken). Every invalid field is
// named at once; a number of another organisation, or none, is not found
// (sms_number_not_found), and a number that is not active is a Conflict
// (sms_number_inactive).
func (s *Service) SendVirtual(ctx context.Context, p tenant.Principal, req VirtualRequest) (Message, error) {
	var fields problem.Fields
	from := phoneField(&fields, "from_number", req.FromNumber)
	to := phoneField(&fields, "to_number", req.ToNumber)
	switch {
	case req.Body == "":
		fields.Add("body", "is required")
	case utf8.RuneCountInString(req.Body) > MaxBodyRunes:
		fields.Add("body", "must be at most 1600 characters")
	}
	if err := fields.Err(); err != nil {
		return Message{}, err
	}
	n, err := s.NumberByPhone(ctx, to)
	if errors.Is(err, ErrNotFound) || (err == nil && (p.Org.ID == "" || n.OrgID != p.Org.ID)) {
		return Message{}, problem.Errorf(problem.NotFound, "sms_number_not_found", "to_number %s is not an SMS number of this organisation", to)
	}
	if err != nil {
		return Message{}, err
	}
	m, _, err := s.Receive(ctx, n, Inbound{From: from, Body: req.Body})
	if errors.Is(err, ErrInactive) {
		return Message{}, inactive(n)
	}
	return m, err
}

// phoneField is the E.164 form of a required phone number field; a missing
// or unreadable one is added to fields.
func phoneField(fields *problem.Fields, name, v string) string {
	if v == "" {
		fields.Add(name, "is required")
		return ""
	}
	p, err := NormalizePhone(v)
	if err != nil {
		fields.Add(name, err.Error())
	}
	return p
}

// inactive is the refusal of a message to a number that is not active.
func inactive(n Number) error {
	return problem.Errorf(problem.Conflict, "sms_number_inactive", "sms number %s is %s, not active", n.Phone, n.Status)
}

package outstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/catchbox/catchbox/internal/outbound/returns"
	"github.com/catchbox/catchbox/internal/store"
)

// Suppression reasons (the suppressions table's reason).
const (
	SuppressedBounced    = "bounced"    // a hard bounce
	SuppressedComplained = "complained" // a feedback report
	SuppressedManual     = "manual"     // an operator's
)

// RecordReport records what rep says of the email's recipients, in one
// transaction, and returns how many events it recorded: one per DSN block
// naming a recipient of the email, one complained event for a feedback
// report. Blocks naming no recipient of the email, and actions RFC 3464 does
// not define, are ignored with a log line. A report recorded before is not
// recorded again (its events carry the report's id as provider_event_id).
func (s *Store) RecordReport(ctx context.Context, emailID string, rep returns.Report) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		n = 0
		var orgID string
		emailID = strings.ToLower(emailID)
		err := tx.QueryRow(ctx, "SELECT org_id FROM outbound_emails WHERE id = ?", emailID).Scan(&orgID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read outbound email %s: %w", emailID, err)
		}
		byEmail, err := recipients(ctx, tx, emailID)
		if err != nil {
			return err
		}
		evs := reportEvents(rep, byEmail[emailID], emailID)
		for _, ev := range evs {
			recorded, err := s.RecordEvent(ctx, tx, emailID, ev.NewEvent)
			if errors.Is(err, ErrDuplicateEvent) {
				continue
			}
			if err != nil {
				return err
			}
			n++
			if ev.suppress == "" {
				continue
			}
			for _, a := range ev.addresses {
				if err := s.Suppress(ctx, tx, orgID, a, ev.suppress, recorded.ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return n, err
}

// reportEvent is an event a report makes, with the addresses it suppresses.
type reportEvent struct {
	NewEvent
	suppress  string // a reason, or "" for none
	addresses []string
}

// reportEvents are the events rep makes of an email whose recipients are rs.
func reportEvents(rep returns.Report, rs []Recipient, emailID string) []reportEvent {
	if rep.Kind == returns.Feedback {
		return feedbackEvents(rep, rs, emailID)
	}
	var out []reportEvent
	for _, b := range rep.Recipients {
		matched := match(rs, b.Original, b.Final)
		if len(matched) == 0 {
			slog.Info("A delivery status notification names no recipient of the outbound email; ignored",
				"outbound_id", emailID, "original_recipient", b.Original, "final_recipient", b.Final)
			continue
		}
		ev := NewEvent{Provider: ProviderSMTP, ProviderEventID: rep.ID + "/" + strings.ToLower(matched[0].Email) + "/" + b.Action}
		er := NewEventRecipient{SMTPCode: b.SMTPCode, EnhancedStatusCode: b.Status, SMTPResponse: diagnosticText(b.DiagnosticCode),
			DiagnosticCode: b.DiagnosticCode, Action: b.Action}
		re := reportEvent{}
		switch b.Action {
		case "failed":
			ev.Type, ev.Subtype, er.BounceType = EventBounced, "permanent", "hard"
			if statusClass(b) == '4' {
				ev.Subtype, er.BounceType = "transient", "soft"
			} else {
				re.suppress = SuppressedBounced
			}
		case "delayed":
			ev.Type = EventDelayed
		case "delivered", "relayed", "expanded":
			ev.Type = EventDelivered
		default:
			slog.Info("A delivery status notification block has an unknown action; ignored",
				"outbound_id", emailID, "action", b.Action)
			continue
		}
		for _, r := range matched {
			er.RecipientID = r.ID
			ev.Recipients = append(ev.Recipients, er)
			re.addresses = append(re.addresses, r.Email)
		}
		re.NewEvent = ev
		out = append(out, re)
	}
	return out
}

// feedbackEvents is the complained event of a feedback report. A report that
// names no recipient of the email (mailbox providers often redact the
// address) concerns its only external recipient when it has one.
func feedbackEvents(rep returns.Report, rs []Recipient, emailID string) []reportEvent {
	var matched []Recipient
	seen := map[string]bool{}
	for _, a := range rep.Complained {
		for _, r := range match(rs, a) {
			if !seen[r.ID] {
				seen[r.ID] = true
				matched = append(matched, r)
			}
		}
	}
	if len(matched) == 0 {
		var external []Recipient
		for _, r := range rs {
			if !r.Internal {
				external = append(external, r)
			}
		}
		if len(external) != 1 {
			slog.Info("A feedback report names no recipient of the outbound email; ignored",
				"outbound_id", emailID, "named", len(rep.Complained))
			return nil
		}
		matched = external
	}
	ev := NewEvent{Type: EventComplained, Subtype: rep.FeedbackType, Provider: ProviderSMTP, ProviderEventID: rep.ID}
	re := reportEvent{suppress: SuppressedComplained}
	for _, r := range matched {
		ev.Recipients = append(ev.Recipients, NewEventRecipient{RecipientID: r.ID, ComplaintFeedbackType: rep.FeedbackType})
		re.addresses = append(re.addresses, r.Email)
	}
	re.NewEvent = ev
	return []reportEvent{re}
}

// match returns the recipients whose address is the first of addrs that any
// recipient has (case is ignored: RFC 5321 section 2.4 lets the receiving
// host decide, and mailbox providers ignore it).
func match(rs []Recipient, addrs ...string) []Recipient {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		var out []Recipient
		for _, r := range rs {
			if strings.EqualFold(r.Email, a) {
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// statusClass is the class of a failed block: its Status's first digit, else
// its SMTP code's, else '5' (failed means the reporting MTA gave up).
func statusClass(b returns.Recipient) byte {
	switch {
	case b.Status != "":
		return b.Status[0]
	case b.SMTPCode != "":
		return b.SMTPCode[0]
	}
	return '5'
}

// diagnosticText is the text of a Diagnostic-Code without its type.
func diagnosticText(v string) string {
	if _, text, ok := strings.Cut(v, ";"); ok {
		return strings.TrimSpace(text)
	}
	return v
}

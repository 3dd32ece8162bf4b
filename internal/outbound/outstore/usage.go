package outstore

import (
	"context"
	"fmt"
	"time"
)

// MonthLayout is how a usage month is written: "2026-11" (UTC).
const MonthLayout = "2006-01"

// MonthlyUsage is an organisation's outbound usage in one calendar month
// (UTC): the messages it created with at least one external recipient (the
// seed's sending rule 7). Messages to its own namespace only are counted as
// inbound when delivered, not here.
type MonthlyUsage struct {
	OrgID    string `json:"organisation_id"`
	Month    string `json:"month"`
	Messages int64  `json:"outbound_messages"`
}

// ParseMonth reads a month as MonthLayout writes it; "" is the month of now.
func ParseMonth(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now.UTC(), nil
	}
	t, err := time.Parse(MonthLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("month must be written YYYY-MM, not %q", s)
	}
	return t, nil
}

// MonthlyUsage returns the organisation's outbound usage in the month of t.
func (s *Store) MonthlyUsage(ctx context.Context, orgID string, t time.Time) (MonthlyUsage, error) {
	n, err := s.Usage(ctx, orgID, t)
	if err != nil {
		return MonthlyUsage{}, err
	}
	return MonthlyUsage{OrgID: orgID, Month: usageMonth(t), Messages: n}, nil
}

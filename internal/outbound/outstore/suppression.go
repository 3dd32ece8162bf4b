package outstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
)

// Suppressions. An address that hard-bounced or drew a complaint is one the
// organisation's mail no longer goes to: a later send records the recipient
// suppressed, with no attempt. An address stays suppressed until removed
// (DELETE /api/suppressions/{address}), e.g. once a test mailbox exists again.

// Suppression is one suppressed address of an organisation.
type Suppression struct {
	Address string `json:"address"`
	// Reason is bounced, complained or manual.
	Reason string `json:"reason"`
	// SourceEventID is the outbound event that suppressed the address.
	SourceEventID string    `json:"source_event_id,omitempty"`
	CreatedAt     time.Time `json:"-"`
}

// MarshalJSON writes created_at as the contract's time.
func (s Suppression) MarshalJSON() ([]byte, error) {
	type plain Suppression
	return marshalJSON(struct {
		plain
		CreatedAt string `json:"created_at"`
	}{plain(s), httpx.Time(s.CreatedAt)})
}

// SuppressedReason is why the organisation no longer sends to addr, "" if it
// does.
func (s *Store) SuppressedReason(ctx context.Context, orgID, addr string) (string, error) {
	var reason string
	err := s.db.QueryRow(ctx, "SELECT reason FROM suppressions WHERE org_id = ? AND address = ?",
		orgID, strings.ToLower(addr)).Scan(&reason)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read suppression of %s: %w", addr, err)
	}
	return reason, nil
}

// Suppress records in tx that the organisation's mail is no longer sent to
// addr, for reason (a Suppressed constant), because of the event eventID; an
// address already suppressed stays as it was.
func (s *Store) Suppress(ctx context.Context, tx *store.Tx, orgID, addr, reason, eventID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO suppressions (org_id, address, reason, source_event_id, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (org_id, address) DO NOTHING`,
		orgID, strings.ToLower(addr), reason, nullString(eventID), ms(s.now()))
	if err != nil {
		return fmt.Errorf("suppress %s: %w", addr, err)
	}
	return nil
}

// Suppressions returns the organisation's suppressed addresses, newest
// first, a page of them, and how many there are in all.
func (s *Store) Suppressions(ctx context.Context, orgID string, limit, offset int) ([]Suppression, int, error) {
	var out []Suppression
	var total int
	err := s.db.InReadTx(ctx, func(tx *store.Tx) error {
		out = nil
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM suppressions WHERE org_id = ?", orgID).Scan(&total); err != nil {
			return fmt.Errorf("count suppressions: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT address, reason, source_event_id, created_at FROM suppressions
			WHERE org_id = ? ORDER BY created_at DESC, address LIMIT ? OFFSET ?`, orgID, limit, offset)
		if err != nil {
			return fmt.Errorf("list suppressions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var sp Suppression
			if err := rows.Scan(&sp.Address, &sp.Reason, optString{&sp.SourceEventID}, msTime{&sp.CreatedAt}); err != nil {
				return fmt.Errorf("read suppression: %w", err)
			}
			out = append(out, sp)
		}
		return rows.Err()
	})
	return out, total, err
}

// Unsuppress removes addr from the organisation's suppressions; ErrNotFound
// when it is not there.
func (s *Store) Unsuppress(ctx context.Context, orgID, addr string) error {
	res, err := s.db.Exec(ctx, "DELETE FROM suppressions WHERE org_id = ? AND address = ?", orgID, strings.ToLower(addr))
	if err != nil {
		return fmt.Errorf("remove suppression of %s: %w", addr, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("remove suppression of %s: %w", addr, err)
	} else if n == 0 {
		return ErrNotFound
	}
	return nil
}

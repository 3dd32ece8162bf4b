package totp

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
)

// ExpiredEvent is the data of a device.expired webhook event.
type ExpiredEvent struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Username  string `json:"username,omitempty"`
	Issuer    string `json:"issuer,omitempty"`
	ExpiresAt string `json:"expires_at"`
}

// announceWindow is how far back an expiry is still announced: a device that
// expired longer ago when first looked at (the server was down) is passed
// over, so that a restart does not send a flood of stale events.
const announceWindow = 24 * time.Hour

// announceBatch bounds the devices one transaction announces.
const announceBatch = 200

// AnnounceExpired writes a device.expired webhook event for each device whose
// expires_at has passed and was not announced yet, and marks it announced,
// in one transaction per batch. It runs periodically (server's
// "device-expiry" worker, one replica at a time).
func (s *Service) AnnounceExpired(ctx context.Context) error {
	for {
		n, err := s.announceBatch(ctx)
		if err != nil {
			return err
		}
		if n < announceBatch {
			return nil
		}
	}
}

func (s *Service) announceBatch(ctx context.Context) (int, error) {
	now := s.Now()
	n := 0
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, org_id, name, username, issuer, expires_at FROM totp_devices
			WHERE expiry_announced = FALSE AND expires_at <= ? ORDER BY expires_at LIMIT ?`, now.UnixMilli(), announceBatch)
		if err != nil {
			return fmt.Errorf("read expired devices: %w", err)
		}
		type expired struct {
			orgID string
			ev    ExpiredEvent
			at    int64
		}
		var es []expired
		for rows.Next() {
			var e expired
			var user, issuer sql.NullString
			if err := rows.Scan(&e.ev.ID, &e.orgID, &e.ev.Name, &user, &issuer, &e.at); err != nil {
				rows.Close()
				return fmt.Errorf("read expired devices: %w", err)
			}
			e.ev.Username, e.ev.Issuer, e.ev.ExpiresAt = user.String, issuer.String, httpx.TimeMillis(e.at)
			es = append(es, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read expired devices: %w", err)
		}
		for _, e := range es {
			if s.events != nil && now.Sub(time.UnixMilli(e.at)) < announceWindow {
				if err := s.events.Emit(ctx, tx, e.orgID, "", EventExpired, e.ev); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, "UPDATE totp_devices SET expiry_announced = TRUE WHERE id = ?", e.ev.ID); err != nil {
				return fmt.Errorf("mark device expiry announced: %w", err)
			}
		}
		n = len(es)
		return nil
	})
	return n, err
}

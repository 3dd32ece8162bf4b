package outbound

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/store"
)

// Verified destinations: the external addresses an organisation may send to
// (the seed's sending rule 1). An operator adds one verified (catchbox admin
// destination add); an API client asks for one (POST /api/destinations) and a
// verification mail goes to the address through the relay, with a signed
// link whose following verifies it. Until then the destination is pending,
// and a send to it is 403 recipient_not_verified.

// Limits of destinations.
const (
	// MaxDestinations is the most destinations, pending or verified, one
	// organisation may ask for through the API.
	MaxDestinations = 100
	// MaxVerificationMailsPerHour is the most verification mails one
	// organisation may have sent in any hour.
	MaxVerificationMailsPerHour = 10
	// VerificationLinkTTL is how long a verification link stays valid.
	VerificationLinkTTL = 24 * time.Hour
)

// Errors of destinations.
var (
	// ErrDestinationLimit: the organisation has MaxDestinations already.
	ErrDestinationLimit = errors.New("destination limit reached")
)

// VerificationRateError: the organisation has sent
// MaxVerificationMailsPerHour verification mails in the last hour; another
// may go at RetryAt.
type VerificationRateError struct{ RetryAt time.Time }

func (e *VerificationRateError) Error() string {
	return fmt.Sprintf("verification mails per hour used up; retry at %s", e.RetryAt.Format(time.RFC3339))
}

// Destination is an external address of an organisation, verified or
// pending verification.
type Destination struct {
	ID         string
	OrgID      string
	Address    string // lower case
	VerifiedAt time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Verified reports whether the organisation may send to the destination.
func (d Destination) Verified() bool { return !d.VerifiedAt.IsZero() }

// MarshalJSON writes a destination as the API shows it.
func (d Destination) MarshalJSON() ([]byte, error) {
	status, verified := "pending", ""
	if d.Verified() {
		status, verified = "verified", httpx.Time(d.VerifiedAt)
	}
	return marshalJSON(struct {
		ID         string `json:"id"`
		Email      string `json:"email"`
		Status     string `json:"status"`
		VerifiedAt string `json:"verified_at,omitempty"`
		CreatedAt  string `json:"created_at"`
	}{d.ID, d.Address, status, verified, httpx.Time(d.CreatedAt)})
}

const destinationColumns = "id, org_id, address, verified_at, created_at, updated_at"

func scanDestination(row interface{ Scan(...any) error }) (Destination, error) {
	var d Destination
	err := row.Scan(&d.ID, &d.OrgID, &d.Address, msTime{&d.VerifiedAt}, msTime{&d.CreatedAt}, msTime{&d.UpdatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return Destination{}, ErrNotFound
	}
	if err != nil {
		return Destination{}, fmt.Errorf("read destination: %w", err)
	}
	return d, nil
}

// destinationByAddress reads the organisation's destination of addr.
func destinationByAddress(ctx context.Context, q querier, orgID, addr string) (Destination, error) {
	return scanDestination(q.QueryRow(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE org_id = ? AND address = ?",
		orgID, strings.ToLower(addr)))
}

// AddVerifiedDestination makes addr a verified destination of the
// organisation, as an operator does: a pending one becomes verified, a
// verified one stays as it was. created reports whether it is new.
func (s *Store) AddVerifiedDestination(ctx context.Context, orgID, addr string) (d Destination, created bool, err error) {
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		now := s.now()
		d, err = destinationByAddress(ctx, tx, orgID, addr)
		switch {
		case errors.Is(err, ErrNotFound):
			d = Destination{ID: NewID(), OrgID: orgID, Address: strings.ToLower(addr), VerifiedAt: now, CreatedAt: now, UpdatedAt: now}
			created = true
			return insertDestination(ctx, tx, d)
		case err != nil:
			return err
		case d.Verified():
			return nil
		}
		d.VerifiedAt, d.UpdatedAt = now, now
		return markVerified(ctx, tx, d)
	})
	return d, created, err
}

// lockOrg makes the organisation's destination changes one at a time: on
// PostgreSQL the organisation's row is locked until the commit, so that two
// requests for one address do not both insert it, and two verification mails
// are not both counted against the same last slot of the hour. SQLite has one
// writer.
func lockOrg(ctx context.Context, tx *store.Tx, orgID string) error {
	if err := tx.LockRow(ctx, "SELECT id FROM orgs WHERE id = ?", orgID); err != nil {
		return fmt.Errorf("lock organisation %s: %w", orgID, err)
	}
	return nil
}

func insertDestination(ctx context.Context, tx *store.Tx, d Destination) error {
	_, err := tx.Exec(ctx, `INSERT INTO destinations (id, org_id, address, verified_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, d.ID, d.OrgID, d.Address, optMs(d.VerifiedAt), ms(d.CreatedAt), ms(d.UpdatedAt))
	if err != nil {
		return fmt.Errorf("insert destination %s: %w", d.Address, err)
	}
	return nil
}

func markVerified(ctx context.Context, tx *store.Tx, d Destination) error {
	_, err := tx.Exec(ctx, "UPDATE destinations SET verified_at = ?, updated_at = ? WHERE id = ?",
		ms(d.VerifiedAt), ms(d.UpdatedAt), d.ID)
	if err != nil {
		return fmt.Errorf("verify destination %s: %w", d.Address, err)
	}
	return nil
}

// RequestDestination asks for addr as a destination of the organisation: a
// verified one is returned as it is (queued false); otherwise it is stored
// pending, if new, and a verification mail is queued (the destination.verify
// job, in the same transaction). ErrDestinationLimit when a new one would
// exceed MaxDestinations; *VerificationRateError when the organisation's
// verification mails of the last hour are used up.
func (s *Store) RequestDestination(ctx context.Context, q *jobs.Queue, orgID, addr string) (d Destination, queued bool, err error) {
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		now := s.now()
		d, err = destinationByAddress(ctx, tx, orgID, addr)
		switch {
		case err == nil && d.Verified():
			queued = false
			return nil
		case errors.Is(err, ErrNotFound):
			var n int
			if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM destinations WHERE org_id = ?", orgID).Scan(&n); err != nil {
				return fmt.Errorf("count destinations: %w", err)
			}
			if n >= MaxDestinations {
				return ErrDestinationLimit
			}
			d = Destination{ID: NewID(), OrgID: orgID, Address: strings.ToLower(addr), CreatedAt: now, UpdatedAt: now}
			if err := insertDestination(ctx, tx, d); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if err := s.countVerificationMail(ctx, tx, d, now); err != nil {
			return err
		}
		payload, err := json.Marshal(verifyPayload{DestinationID: d.ID})
		if err != nil {
			return err
		}
		if _, err := q.Enqueue(ctx, tx, DestinationVerifyKind, payload, jobs.EnqueueOptions{}); err != nil {
			return err
		}
		queued = true
		return nil
	})
	return d, queued, err
}

// countVerificationMail counts a verification mail of d against its
// organisation's hourly allowance, or returns *VerificationRateError.
func (s *Store) countVerificationMail(ctx context.Context, tx *store.Tx, d Destination, now time.Time) error {
	hourAgo := ms(now.Add(-time.Hour))
	if _, err := tx.Exec(ctx, "DELETE FROM destination_verifications WHERE org_id = ? AND created_at <= ?", d.OrgID, hourAgo); err != nil {
		return fmt.Errorf("prune verification mails: %w", err)
	}
	var n int
	var oldest sql.NullInt64
	if err := tx.QueryRow(ctx, "SELECT COUNT(*), MIN(created_at) FROM destination_verifications WHERE org_id = ?",
		d.OrgID).Scan(&n, &oldest); err != nil {
		return fmt.Errorf("count verification mails: %w", err)
	}
	if n >= MaxVerificationMailsPerHour {
		return &VerificationRateError{RetryAt: time.UnixMilli(oldest.Int64).Add(time.Hour)}
	}
	_, err := tx.Exec(ctx, "INSERT INTO destination_verifications (id, org_id, destination_id, created_at) VALUES (?, ?, ?, ?)",
		NewID(), d.OrgID, d.ID, ms(now))
	if err != nil {
		return fmt.Errorf("count verification mail: %w", err)
	}
	return nil
}

// Destinations returns the organisation's destinations, oldest first.
func (s *Store) Destinations(ctx context.Context, orgID string) ([]Destination, error) {
	rows, err := s.db.Query(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE org_id = ? ORDER BY created_at, id", orgID)
	if err != nil {
		return nil, fmt.Errorf("list destinations: %w", err)
	}
	defer rows.Close()
	var out []Destination
	for rows.Next() {
		d, err := scanDestination(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DestinationByID returns a destination by id; with orgID set, only the
// organisation's (ErrNotFound otherwise).
func (s *Store) DestinationByID(ctx context.Context, orgID, id string) (Destination, error) {
	d, err := scanDestination(s.db.QueryRow(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE id = ?", strings.ToLower(id)))
	if err == nil && orgID != "" && d.OrgID != orgID {
		return Destination{}, ErrNotFound
	}
	return d, err
}

// RemoveDestination removes the organisation's destination id (ErrNotFound
// if it has none such): later sends to the address are 403 again.
func (s *Store) RemoveDestination(ctx context.Context, orgID, id string) error {
	return s.removeDestination(ctx, "DELETE FROM destinations WHERE org_id = ? AND id = ?", orgID, strings.ToLower(id))
}

// RemoveDestinationAddress removes the organisation's destination of addr.
func (s *Store) RemoveDestinationAddress(ctx context.Context, orgID, addr string) error {
	return s.removeDestination(ctx, "DELETE FROM destinations WHERE org_id = ? AND address = ?", orgID, strings.ToLower(addr))
}

func (s *Store) removeDestination(ctx context.Context, query string, args ...any) error {
	res, err := s.db.Exec(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("remove destination: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("remove destination: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// VerifyDestination marks destination id verified (a followed verification
// link) and returns it; one already verified stays as it was.
func (s *Store) VerifyDestination(ctx context.Context, id string) (Destination, error) {
	var d Destination
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		d, err = scanDestination(tx.QueryRow(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE id = ?", strings.ToLower(id)))
		if err != nil || d.Verified() {
			return err
		}
		now := s.now()
		d.VerifiedAt, d.UpdatedAt = now, now
		return markVerified(ctx, tx, d)
	})
	return d, err
}

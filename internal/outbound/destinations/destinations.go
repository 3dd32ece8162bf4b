// Package destinations keeps the verified destinations of organisations:
// the external addresses an organisation may send to (the seed's sending rule
// 1). An operator adds one verified (catchbox admin destination add); an API
// client asks for one (POST /api/destinations) and a verification mail goes
// to the address through the relay, with a signed link whose following
// verifies it (Verifier). Until then the destination is pending, and a send
// to it is refused (recipient_not_verified).
//
// The package is the destinations' store and their verification mail; the
// operations a user takes on them (add, verify, remove) are
// outbound.Service's, which checks the request and asks the Store.
package destinations

import (
	"bytes"
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
	"github.com/catchbox/catchbox/internal/tenant"
)

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
	// ErrNotFound: no such destination, or one of another organisation.
	ErrNotFound = store.ErrNotFound
	// ErrLimit: the organisation has MaxDestinations already.
	ErrLimit = errors.New("destination limit reached")
)

// RateError: the organisation has sent MaxVerificationMailsPerHour
// verification mails in the last hour; another may go at RetryAt, Retry from
// the refusal.
type RateError struct {
	RetryAt time.Time
	Retry   time.Duration
}

func (e *RateError) Error() string {
	return fmt.Sprintf("verification mails per hour used up; retry at %s", e.RetryAt.Format(time.RFC3339))
}

// Store keeps the destinations of organisations.
type Store struct {
	db *store.DB
	// Now is the clock (time.Now); tests move it.
	Now func() time.Time
}

// NewStore returns the destinations' store over db.
func NewStore(db *store.DB) *Store { return &Store{db: db, Now: time.Now} }

// now is the clock as stored: UTC, whole milliseconds.
func (s *Store) now() time.Time { return s.Now().UTC().Truncate(time.Millisecond) }

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
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // an address may hold '&'; the API writes it as it is
	err := enc.Encode(struct {
		ID         string `json:"id"`
		Email      string `json:"email"`
		Status     string `json:"status"`
		VerifiedAt string `json:"verified_at,omitempty"`
		CreatedAt  string `json:"created_at"`
	}{d.ID, d.Address, status, verified, httpx.Time(d.CreatedAt)})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

const destinationColumns = "id, org_id, address, verified_at, created_at, updated_at"

func scanDestination(row interface{ Scan(...any) error }) (Destination, error) {
	var d Destination
	var verified sql.NullInt64
	var created, updated int64
	err := row.Scan(&d.ID, &d.OrgID, &d.Address, &verified, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Destination{}, ErrNotFound
	}
	if err != nil {
		return Destination{}, fmt.Errorf("read destination: %w", err)
	}
	if verified.Valid {
		d.VerifiedAt = time.UnixMilli(verified.Int64).UTC()
	}
	d.CreatedAt, d.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return d, nil
}

// querier is a store.DB or a store.Tx.
type querier interface {
	QueryRow(ctx context.Context, query string, args ...any) *sql.Row
}

// destinationByAddress reads the organisation's destination of addr.
func destinationByAddress(ctx context.Context, q querier, orgID, addr string) (Destination, error) {
	return scanDestination(q.QueryRow(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE org_id = ? AND address = ?",
		orgID, strings.ToLower(addr)))
}

// Verified reports whether addr is a verified destination of the
// organisation: an external address it may send to (the seed's sending rule
// 1). Case is ignored (destinations are stored in lower case).
func (s *Store) Verified(ctx context.Context, orgID, addr string) (bool, error) {
	d, err := destinationByAddress(ctx, s.db, orgID, addr)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return d.Verified(), nil
}

// AddVerified makes addr a verified destination of the organisation, as an
// operator does: a pending one becomes verified, a verified one stays as it
// was. created reports whether it is new.
func (s *Store) AddVerified(ctx context.Context, orgID, addr string) (d Destination, created bool, err error) {
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if err := lockOrg(ctx, tx, orgID); err != nil {
			return err
		}
		now := s.now()
		d, err = destinationByAddress(ctx, tx, orgID, addr)
		switch {
		case errors.Is(err, ErrNotFound):
			d = Destination{ID: tenant.NewID(), OrgID: orgID, Address: strings.ToLower(addr), VerifiedAt: now, CreatedAt: now, UpdatedAt: now}
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
	var verifiedAt any // NULL: pending
	if d.Verified() {
		verifiedAt = d.VerifiedAt.UnixMilli()
	}
	_, err := tx.Exec(ctx, `INSERT INTO destinations (id, org_id, address, verified_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, d.ID, d.OrgID, d.Address, verifiedAt, d.CreatedAt.UnixMilli(), d.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("insert destination %s: %w", d.Address, err)
	}
	return nil
}

func markVerified(ctx context.Context, tx *store.Tx, d Destination) error {
	_, err := tx.Exec(ctx, "UPDATE destinations SET verified_at = ?, updated_at = ? WHERE id = ?",
		d.VerifiedAt.UnixMilli(), d.UpdatedAt.UnixMilli(), d.ID)
	if err != nil {
		return fmt.Errorf("verify destination %s: %w", d.Address, err)
	}
	return nil
}

// Request asks for addr as a destination of the organisation: a verified one
// is returned as it is (queued false); otherwise it is stored pending, if new,
// and a verification mail is queued (the VerifyKind job, in the same
// transaction). ErrLimit when a new one would exceed MaxDestinations;
// *RateError when the organisation's verification mails of the last hour are
// used up.
func (s *Store) Request(ctx context.Context, q *jobs.Queue, orgID, addr string) (d Destination, queued bool, err error) {
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
				return ErrLimit
			}
			d = Destination{ID: tenant.NewID(), OrgID: orgID, Address: strings.ToLower(addr), CreatedAt: now, UpdatedAt: now}
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
		if _, err := q.Enqueue(ctx, tx, VerifyKind, payload, jobs.EnqueueOptions{}); err != nil {
			return err
		}
		queued = true
		return nil
	})
	return d, queued, err
}

// countVerificationMail counts a verification mail of d against its
// organisation's hourly allowance, or returns *RateError.
func (s *Store) countVerificationMail(ctx context.Context, tx *store.Tx, d Destination, now time.Time) error {
	hourAgo := now.Add(-time.Hour).UnixMilli()
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
		at := time.UnixMilli(oldest.Int64).Add(time.Hour)
		return &RateError{RetryAt: at, Retry: at.Sub(now)}
	}
	_, err := tx.Exec(ctx, "INSERT INTO destination_verifications (id, org_id, destination_id, created_at) VALUES (?, ?, ?, ?)",
		tenant.NewID(), d.OrgID, d.ID, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("count verification mail: %w", err)
	}
	return nil
}

// List returns the organisation's destinations, oldest first.
func (s *Store) List(ctx context.Context, orgID string) ([]Destination, error) {
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

// ByID returns a destination by id; with orgID set, only the organisation's
// (ErrNotFound otherwise).
func (s *Store) ByID(ctx context.Context, orgID, id string) (Destination, error) {
	d, err := scanDestination(s.db.QueryRow(ctx, "SELECT "+destinationColumns+" FROM destinations WHERE id = ?", strings.ToLower(id)))
	if err == nil && orgID != "" && d.OrgID != orgID {
		return Destination{}, ErrNotFound
	}
	return d, err
}

// Remove removes the organisation's destination id (ErrNotFound if it has
// none such): later sends to the address are refused again.
func (s *Store) Remove(ctx context.Context, orgID, id string) error {
	return s.removeDestination(ctx, "DELETE FROM destinations WHERE org_id = ? AND id = ?", orgID, strings.ToLower(id))
}

// RemoveAddress removes the organisation's destination of addr.
func (s *Store) RemoveAddress(ctx context.Context, orgID, addr string) error {
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

// Verify marks destination id verified (a followed verification link) and
// returns it; one already verified stays as it was.
func (s *Store) Verify(ctx context.Context, id string) (Destination, error) {
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

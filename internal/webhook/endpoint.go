package webhook

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Errors of the endpoint functions.
var (
	ErrNotFound     = errors.New("webhook endpoint not found")
	ErrLimitReached = errors.New("webhook endpoint limit reached")
)

// SecretPrefix leads every endpoint secret, as Standard Webhooks writes them.
const SecretPrefix = "whsec_"

// secretBytes is the length of a secret's key: 256 bits, HMAC-SHA256's block
// of security.
const secretBytes = 32

// RotationOverlap is how long the secret a rotation replaced still signs.
const RotationOverlap = 24 * time.Hour

// Endpoint is an organisation's webhook endpoint, as the API returns it.
// Secret is set only in the answer that creates it or rotates it.
type Endpoint struct {
	ID             string    `json:"id"`
	OrgID          string    `json:"organisation_id"`
	URL            string    `json:"url"`
	EventTypes     []string  `json:"event_types"`
	Namespace      string    `json:"namespace,omitempty"`
	Description    string    `json:"description,omitempty"`
	Enabled        bool      `json:"enabled"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	FailingSince   time.Time `json:"-"`
	CreatedAt      time.Time `json:"-"`
	UpdatedAt      time.Time `json:"-"`
	// PreviousSecretUntil is when the secret a rotation replaced stops
	// signing; zero when there is none.
	PreviousSecretUntil time.Time `json:"-"`
	Secret              string    `json:"-"`

	secrets [][]byte // the keys that sign, newest first (delivery only)
}

// Spec is what an endpoint is created or changed with; nil fields of an
// update are left as they are.
type Spec struct {
	URL         *string
	EventTypes  []string // nil: all on create, unchanged on update
	Namespace   *string  // "" removes the filter
	Description *string
	Enabled     *bool
}

// newSecret returns a fresh secret in its whsec_ form and its key.
func newSecret() (string, []byte) {
	k := make([]byte, secretBytes)
	rand.Read(k)
	return SecretPrefix + base64.StdEncoding.EncodeToString(k), k
}

const endpointColumns = `id, org_id, url, event_types, namespace, description, enabled, disabled_reason,
	secret, previous_secret, previous_secret_until, failing_since, created_at, updated_at`

func (s *Service) scanEndpoint(row interface{ Scan(...any) error }) (Endpoint, error) {
	var (
		e                      Endpoint
		types                  string
		ns, reason             sql.NullString
		sealed, prev           []byte
		prevUntil, failing     sql.NullInt64
		createdAt, updatedAtMs int64
	)
	err := row.Scan(&e.ID, &e.OrgID, &e.URL, &types, &ns, &e.Description, &e.Enabled, &reason,
		&sealed, &prev, &prevUntil, &failing, &createdAt, &updatedAtMs)
	if noRows(err) {
		return Endpoint{}, ErrNotFound
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("read webhook endpoint: %w", err)
	}
	e.EventTypes = splitTypes(types)
	if e.EventTypes == nil {
		e.EventTypes = []string{}
	}
	e.Namespace, e.DisabledReason = ns.String, reason.String
	e.CreatedAt, e.UpdatedAt = time.UnixMilli(createdAt).UTC(), time.UnixMilli(updatedAtMs).UTC()
	if failing.Valid {
		e.FailingSince = time.UnixMilli(failing.Int64).UTC()
	}
	key, err := s.sealer.Open(sealed, []byte(e.ID))
	if err != nil {
		return Endpoint{}, fmt.Errorf("open the secret of webhook endpoint %s: %w", e.ID, err)
	}
	e.secrets = [][]byte{key}
	if prevUntil.Valid && prev != nil {
		e.PreviousSecretUntil = time.UnixMilli(prevUntil.Int64).UTC()
		if old, err := s.sealer.Open(prev, []byte(e.ID)); err == nil && s.now().Before(e.PreviousSecretUntil) {
			e.secrets = append(e.secrets, old)
		}
	}
	if !s.now().Before(e.PreviousSecretUntil) {
		e.PreviousSecretUntil = time.Time{}
	}
	return e, nil
}

// Create adds an endpoint to the organisation and returns it with its
// secret, the only time the secret is shown. The spec must have been checked
// (CreateEndpoint checks it).
func (s *Service) Create(ctx context.Context, orgID string, spec Spec) (Endpoint, error) {
	now := s.now()
	e := Endpoint{ID: tenant.NewID(), OrgID: orgID, URL: *spec.URL, EventTypes: spec.EventTypes, Enabled: true,
		CreatedAt: now, UpdatedAt: now}
	if e.EventTypes == nil {
		e.EventTypes = EventTypes
	}
	if spec.Namespace != nil {
		e.Namespace = *spec.Namespace
	}
	if spec.Description != nil {
		e.Description = *spec.Description
	}
	if spec.Enabled != nil {
		e.Enabled = *spec.Enabled
	}
	var key []byte
	e.Secret, key = newSecret()
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		// The organisation's row is locked so that two creations cannot both
		// pass the limit.
		var id string
		if err := tx.QueryRow(ctx, "SELECT id FROM orgs WHERE id = ?"+tx.ForUpdate(), orgID).Scan(&id); err != nil {
			return fmt.Errorf("lock organisation: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM webhook_endpoints WHERE org_id = ?", orgID).Scan(&n); err != nil {
			return fmt.Errorf("count webhook endpoints: %w", err)
		}
		if n >= s.cfg.MaxEndpoints {
			return fmt.Errorf("%w: an organisation has at most %d endpoints", ErrLimitReached, s.cfg.MaxEndpoints)
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_endpoints (id, org_id, url, event_types, namespace, description, enabled,
			secret, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, orgID, e.URL, strings.Join(e.EventTypes, ","), nullString(e.Namespace), e.Description, e.Enabled,
			s.sealer.Seal(key, []byte(e.ID)), now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("insert webhook endpoint: %w", err)
		}
		return s.changed(ctx, tx, orgID)
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// List returns the organisation's endpoints, oldest first; orgID "" lists
// every organisation's (the admin command).
func (s *Service) List(ctx context.Context, orgID string) ([]Endpoint, error) {
	q, args := "SELECT "+endpointColumns+" FROM webhook_endpoints WHERE org_id = ? ORDER BY created_at, id", []any{orgID}
	if orgID == "" {
		q, args = "SELECT "+endpointColumns+" FROM webhook_endpoints ORDER BY created_at, id", nil
	}
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	defer rows.Close()
	out := []Endpoint{}
	for rows.Next() {
		e, err := s.scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Get returns the organisation's endpoint with the id, or ErrNotFound (also
// when it is another organisation's). orgID "" finds any (the admin command).
func (s *Service) Get(ctx context.Context, orgID, id string) (Endpoint, error) {
	e, err := s.scanEndpoint(s.db.QueryRow(ctx, "SELECT "+endpointColumns+" FROM webhook_endpoints WHERE id = ?", id))
	if err == nil && orgID != "" && e.OrgID != orgID {
		return Endpoint{}, ErrNotFound
	}
	return e, err
}

// Update changes the endpoint with the spec's set fields. Enabling a
// disabled endpoint clears its disabled_reason and its failure streak, and
// resumes its deliveries.
func (s *Service) Update(ctx context.Context, orgID, id string, spec Spec) (Endpoint, error) {
	e, err := s.Get(ctx, orgID, id)
	if err != nil {
		return Endpoint{}, err
	}
	if spec.URL != nil {
		e.URL = *spec.URL
	}
	if spec.EventTypes != nil {
		e.EventTypes = spec.EventTypes
	}
	if spec.Namespace != nil {
		e.Namespace = *spec.Namespace
	}
	if spec.Description != nil {
		e.Description = *spec.Description
	}
	reenabled := spec.Enabled != nil && *spec.Enabled && !e.Enabled
	if spec.Enabled != nil {
		e.Enabled = *spec.Enabled
	}
	if spec.Enabled != nil {
		e.DisabledReason = ""
	}
	if reenabled {
		e.FailingSince = time.Time{}
	}
	e.UpdatedAt = s.now()
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET url = ?, event_types = ?, namespace = ?, description = ?,
			enabled = ?, disabled_reason = ?, failing_since = ?, updated_at = ? WHERE id = ? AND org_id = ?`,
			e.URL, strings.Join(e.EventTypes, ","), nullString(e.Namespace), e.Description, e.Enabled,
			nullString(e.DisabledReason), optMs(e.FailingSince), e.UpdatedAt.UnixMilli(), e.ID, e.OrgID)
		if err != nil {
			return fmt.Errorf("update webhook endpoint: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		if reenabled {
			if err := s.ensureScheduled(ctx, tx, e.ID); err != nil {
				return err
			}
		}
		return s.changed(ctx, tx, e.OrgID)
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// Delete removes the endpoint, its pending messages and its delivery log.
// Its delivery job, if any, finds it gone and ends.
func (s *Service) Delete(ctx context.Context, orgID, id string) error {
	e, err := s.Get(ctx, orgID, id)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		for _, q := range []string{"DELETE FROM webhook_attempts WHERE endpoint_id = ?",
			"DELETE FROM webhook_messages WHERE endpoint_id = ?", "DELETE FROM webhook_endpoints WHERE id = ?"} {
			if _, err := tx.Exec(ctx, q, e.ID); err != nil {
				return fmt.Errorf("delete webhook endpoint: %w", err)
			}
		}
		return s.changed(ctx, tx, e.OrgID)
	})
}

// RotateSecret gives the endpoint a new secret and returns the endpoint with
// it. The secret it replaces goes on signing, beside the new one, for
// RotationOverlap, so the receiver can switch at its own pace; a secret
// replaced earlier stops signing at once.
func (s *Service) RotateSecret(ctx context.Context, orgID, id string) (Endpoint, error) {
	e, err := s.Get(ctx, orgID, id)
	if err != nil {
		return Endpoint{}, err
	}
	now := s.now()
	var key []byte
	e.Secret, key = newSecret()
	e.PreviousSecretUntil = now.Add(RotationOverlap)
	e.UpdatedAt = now
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ?,
			updated_at = ? WHERE id = ?`, e.PreviousSecretUntil.UnixMilli(), s.sealer.Seal(key, []byte(e.ID)), now.UnixMilli(), e.ID)
		if err != nil {
			return fmt.Errorf("rotate webhook secret: %w", err)
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func optMs(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

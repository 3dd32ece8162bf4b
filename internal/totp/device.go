package totp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Sources name how a device was created (the TotpDevice source field).
const (
	SourceSharedSecret    = "shared_secret"
	SourceCustom          = "custom"
	SourceBase32SecretKey = "base32_secret_key"
	SourceOtpauthURL      = "otpauth_url"
)

// DefaultName is a device's name when neither a name, an issuer nor a username is
// known.
const DefaultName = "Authenticator"

// Errors of the device service; the HTTP layer maps each to its status and code.
var (
	ErrNotFound     = errors.New("device not found")
	ErrExpired      = errors.New("device expired")
	ErrDisabled     = errors.New("TOTP devices are disabled for the organisation")
	ErrLimitReached = errors.New("the organisation's active device limit is reached")
)

// Device is a saved virtual authenticator of an organisation. Username and Issuer
// are "" when unknown (null in the API); ExpiresAt is zero when the device never
// expires. The secret stays sealed inside the device value.
type Device struct {
	ID        string
	OrgID     string
	Name      string
	Username  string
	Issuer    string
	Params    Params
	Source    string
	ExpiresAt time.Time
	CreatedAt time.Time
	UpdatedAt time.Time

	sealed []byte
}

// Expired reports whether the device has expired at now: a device expires when
// the clock reaches its expires_at.
func (d Device) Expired(now time.Time) bool {
	return !d.ExpiresAt.IsZero() && !now.Before(d.ExpiresAt)
}

// NewDevice is a device to save. Name "" means derive one.
type NewDevice struct {
	Secret    []byte
	Name      string
	Username  string
	Issuer    string
	Params    Params
	Source    string
	ExpiresAt time.Time
}

// DeriveName is the name of a device saved without one (contract section 5):
// "Issuer (username)", else the issuer, else the username, else "Authenticator".
func DeriveName(issuer, username string) string {
	var n string
	switch {
	case issuer != "" && username != "":
		n = issuer + " (" + username + ")"
	case issuer != "":
		n = issuer
	case username != "":
		n = username
	default:
		return DefaultName
	}
	if utf8.RuneCountInString(n) > MaxTextLength {
		n = string([]rune(n)[:MaxTextLength])
	}
	return n
}

// Service stores devices and makes their codes. Now and Sleep are the clock; tests
// replace them to check codes at fixed instants and to wait without waiting.
type Service struct {
	db     *store.DB
	sealer *secret.Sealer

	// Now is the current time (time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends, returning ctx's error in the latter case.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives the service's log lines (slog.Default()). Secrets never go there.
	Log *slog.Logger

	events Events
}

// EventExpired is the type of the event written when a device expires
// (AnnounceExpired).
const EventExpired = "device.expired"

// Events receives the package's events in the transaction of their cause
// (webhook.Service writes them to its outbox). It is defined here, where
// events are emitted, so that totp needs nothing of whoever takes them.
type Events interface {
	// Emit writes an event of the organisation; namespace is "" for none.
	Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error
}

// sealPurpose separates the device-secret encryption key from every other key
// derived from the server secret.
const sealPurpose = "totp-device-secret"

// NewService returns the device service over db; secrets are sealed with a key
// derived from the server key. events, which may be nil, receives the
// device.expired events (AnnounceExpired).
func NewService(db *store.DB, key *secret.Key, events Events) *Service {
	return &Service{db: db, sealer: key.Sealer(sealPurpose), Now: time.Now, Sleep: SleepContext, Log: slog.Default(), events: events}
}

// SleepContext waits d, or until ctx ends (the client went away).
func SleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// associated binds a sealed secret to its row: copied to another device or
// organisation, it does not open.
func associated(orgID, deviceID string) []byte {
	return []byte(orgID + "\x00" + deviceID)
}

// Validate checks a device before it is saved, at now.
func Validate(in NewDevice, now time.Time) *problem.FieldError {
	if len(in.Secret) == 0 {
		return &problem.FieldError{Field: "secret", Detail: ErrSecretEmpty.Error()}
	}
	if fe := in.Params.Check(); fe != nil {
		return fe
	}
	for _, f := range []struct{ name, v string }{{"name", in.Name}, {"username", in.Username}, {"issuer", in.Issuer}} {
		if d := CheckText(f.v); d != "" {
			return &problem.FieldError{Field: f.name, Detail: d}
		}
	}
	if !in.ExpiresAt.IsZero() && !in.ExpiresAt.After(now) {
		return &problem.FieldError{Field: "expires_at", Detail: "must be in the future"}
	}
	return nil
}

// Create saves a device for the organisation, unless TOTP is off for it
// (ErrDisabled) or its active devices are at the limit (ErrLimitReached). The
// check and the insert share one transaction in which the organisation's row is
// locked (SQLite: the single writer), so concurrent creates cannot overshoot.
func (s *Service) Create(ctx context.Context, orgID string, in NewDevice) (Device, error) {
	now := s.Now().Truncate(time.Millisecond)
	in.ExpiresAt = in.ExpiresAt.Truncate(time.Millisecond)
	if fe := Validate(in, now); fe != nil {
		return Device{}, fe
	}
	d := Device{ID: tenant.NewID(), OrgID: orgID, Name: in.Name, Username: in.Username, Issuer: in.Issuer,
		Params: in.Params, Source: in.Source, ExpiresAt: in.ExpiresAt, CreatedAt: now, UpdatedAt: now}
	if d.Name == "" {
		d.Name = DeriveName(d.Issuer, d.Username)
	}
	d.sealed = s.sealer.Seal(in.Secret, associated(orgID, d.ID))

	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		// The row lock serialises creates of one organisation.
		q := "SELECT totp_device_limit, totp_enabled FROM orgs WHERE id = ?" + tx.ForUpdate()
		var limit int
		var enabled bool
		if err := tx.QueryRow(ctx, q, orgID).Scan(&limit, &enabled); err != nil {
			return fmt.Errorf("read organisation: %w", err)
		}
		if !enabled {
			return ErrDisabled
		}
		var active int
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM totp_devices WHERE org_id = ? AND "+activeClause,
			orgID, now.UnixMilli()).Scan(&active); err != nil {
			return fmt.Errorf("count devices: %w", err)
		}
		if active >= limit {
			return ErrLimitReached
		}
		_, err := tx.Exec(ctx, `INSERT INTO totp_devices (id, org_id, name, username, issuer, username_fold, issuer_fold,
			digits, period, algorithm, source, secret_sealed, expires_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, d.OrgID, d.Name, nullString(d.Username), nullString(d.Issuer),
			nullString(fold(d.Username)), nullString(fold(d.Issuer)),
			d.Params.Digits, d.Params.Period, string(d.Params.Algorithm), d.Source, d.sealed,
			nullTime(d.ExpiresAt), now.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("insert device: %w", err)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrDisabled) || errors.Is(err, ErrLimitReached) {
			return Device{}, err
		}
		return Device{}, fmt.Errorf("save TOTP device: %w", err)
	}
	s.Log.Info("Saved TOTP device", "org_id", orgID, "device_id", d.ID, "source", d.Source)
	return d, nil
}

// activeClause keeps devices that have not expired at the time bound to its '?'.
const activeClause = "(expires_at IS NULL OR expires_at > ?)"

const deviceColumns = `id, org_id, name, username, issuer, digits, period, algorithm, source,
	secret_sealed, expires_at, created_at, updated_at`

func scanDevice(row interface{ Scan(...any) error }) (Device, error) {
	var d Device
	var username, issuer sql.NullString
	var alg string
	var expires sql.NullInt64
	var created, updated int64
	err := row.Scan(&d.ID, &d.OrgID, &d.Name, &username, &issuer, &d.Params.Digits, &d.Params.Period, &alg,
		&d.Source, &d.sealed, &expires, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Device{}, ErrNotFound
	}
	if err != nil {
		return Device{}, fmt.Errorf("read device: %w", err)
	}
	d.Username, d.Issuer, d.Params.Algorithm = username.String, issuer.String, Algorithm(alg)
	if expires.Valid {
		d.ExpiresAt = time.UnixMilli(expires.Int64).UTC()
	}
	d.CreatedAt, d.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return d, nil
}

// Get returns one of the organisation's devices, expired or not. Another
// organisation's device, and an id that is not a UUID, are ErrNotFound.
func (s *Service) Get(ctx context.Context, orgID, id string) (Device, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Device{}, ErrNotFound
	}
	return scanDevice(s.db.QueryRow(ctx, "SELECT "+deviceColumns+" FROM totp_devices WHERE id = ? AND org_id = ?", id, orgID))
}

// Filter selects devices of the list: case-insensitive substrings of the username
// and issuer ("" matches all), and a page.
type Filter struct {
	Username string
	Issuer   string
	Limit    int
	Offset   int64
}

// List returns the organisation's active devices matching f, newest first, and
// how many match in all.
func (s *Service) List(ctx context.Context, orgID string, f Filter) (total int, devices []Device, err error) {
	where := "org_id = ? AND " + activeClause
	args := []any{orgID, s.Now().UnixMilli()}
	if f.Username != "" {
		where += ` AND username_fold LIKE ? ESCAPE '\'`
		args = append(args, containsPattern(f.Username))
	}
	if f.Issuer != "" {
		where += ` AND issuer_fold LIKE ? ESCAPE '\'`
		args = append(args, containsPattern(f.Issuer))
	}
	if err := s.db.QueryRow(ctx, "SELECT COUNT(*) FROM totp_devices WHERE "+where, args...).Scan(&total); err != nil {
		return 0, nil, fmt.Errorf("count devices: %w", err)
	}
	rows, err := s.db.Query(ctx, "SELECT "+deviceColumns+" FROM totp_devices WHERE "+where+
		" ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", append(args, f.Limit, f.Offset)...)
	if err != nil {
		return 0, nil, fmt.Errorf("list devices: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return 0, nil, err
		}
		devices = append(devices, d)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("list devices: %w", err)
	}
	return total, devices, nil
}

// Delete removes one of the organisation's devices, expired or not.
func (s *Service) Delete(ctx context.Context, orgID, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return ErrNotFound
	}
	res, err := s.db.Exec(ctx, "DELETE FROM totp_devices WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return fmt.Errorf("delete device: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete device: %w", err)
	} else if n == 0 {
		return ErrNotFound
	}
	s.Log.Info("Deleted TOTP device", "org_id", orgID, "device_id", id)
	return nil
}

// secret opens the device's sealed secret.
func (s *Service) secret(d Device) ([]byte, error) {
	key, err := s.sealer.Open(d.sealed, associated(d.OrgID, d.ID))
	if err != nil {
		return nil, fmt.Errorf("open secret of device %s: %w", d.ID, err)
	}
	return key, nil
}

// DeviceOTP returns the current code of one of the organisation's devices, or,
// when that code stays valid for less than minValid, waits for the next period and
// returns its code. An expired device is ErrExpired; minValid must be below the
// device's period.
func (s *Service) DeviceOTP(ctx context.Context, orgID, id string, minValid time.Duration) (OTP, error) {
	d, err := s.Get(ctx, orgID, id)
	if err != nil {
		return OTP{}, err
	}
	if d.Expired(s.Now()) {
		return OTP{}, ErrExpired
	}
	if fe := CheckMinValid(minValid, d.Params.Period); fe != nil {
		return OTP{}, fe
	}
	key, err := s.secret(d)
	if err != nil {
		return OTP{}, err
	}
	return s.OTP(ctx, key, d.Params, minValid)
}

// CheckMinValid refuses a minimum validity that is not below the period: no code
// of that period could satisfy it (the seed's Limits section).
func CheckMinValid(minValid time.Duration, period int) *problem.FieldError {
	if minValid < 0 {
		return &problem.FieldError{Field: "min_seconds_until_expire", Detail: "must be at least 0"}
	}
	if minValid >= time.Duration(period)*time.Second {
		return &problem.FieldError{Field: "min_seconds_until_expire", Code: "min_seconds_not_below_period",
			Detail: fmt.Sprintf("must be less than the period (%d seconds)", period)}
	}
	return nil
}

// OTP returns the current code of secret, or the next one when the current code
// stays valid for less than minValid (the seed's minimum-validity rule). The wait
// ends early when ctx does, with ctx's error.
func (s *Service) OTP(ctx context.Context, secret []byte, p Params, minValid time.Duration) (OTP, error) {
	now := s.Now()
	c := Counter(now, p.Period)
	otp := AtCounter(secret, p, c)
	if left := otp.Expires.Sub(now); left < minValid {
		if err := s.Sleep(ctx, left); err != nil {
			return OTP{}, fmt.Errorf("wait for the next TOTP period: %w", err)
		}
		otp = AtCounter(secret, p, c+1)
	}
	return otp, nil
}

// OtpauthURL is the otpauth URL of one of the organisation's devices, for showing
// it as a QR code (the dashboard's hook). It carries the secret: only the device's
// organisation may see it, and only on purpose.
func (s *Service) OtpauthURL(ctx context.Context, orgID, id string) (string, error) {
	d, err := s.Get(ctx, orgID, id)
	if err != nil {
		return "", err
	}
	key, err := s.secret(d)
	if err != nil {
		return "", err
	}
	return Key{Secret: key, Issuer: d.Issuer, Account: d.Username, Digits: d.Params.Digits,
		Period: d.Params.Period, Algorithm: d.Params.Algorithm}.URL(), nil
}

// fold is the form the case-insensitive filters compare.
func fold(s string) string { return strings.ToLower(s) }

// containsPattern is a LIKE pattern matching values that contain s, with LIKE's
// wildcards in s taken literally.
func containsPattern(s string) string {
	return "%" + store.EscapeLike(fold(s)) + "%"
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// Package tenant owns organisations, their API keys and their namespaces (inboxes):
// who a request is, and which namespaces it may see.
//
// An API key is a random token shown once; only its SHA-256 is stored. A namespace
// belongs to one organisation and may be shared with one other (read access).
package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
)

// Defaults of a new organisation and namespace.
const (
	DefaultTOTPDeviceLimit = 100
	DefaultRetention       = 86400 // seconds (contract section 5)
	MinRetention           = 60
	MaxQuotaLimit          = 1_000_000
	DefaultName            = "default"
)

// DefaultQuotaLimit is the quota of a namespace whose quota_limit is null ("the
// server default", contract section 5): 0, no limit, so emails leave such a
// namespace only when its retention_time runs out. A namespace that sets
// quota_limit keeps its newest quota_limit emails; the oldest are deleted at
// ingest, in the transaction that stores the new ones.
const DefaultQuotaLimit = 0

// Errors the service returns; handlers map them to statuses.
var (
	ErrNotFound      = store.ErrNotFound
	ErrNameTaken     = errors.New("name already taken")
	ErrNamespaceName = errors.New("namespace names are 1 to 63 characters of a-z, 0-9 and '-', not starting or ending with '-'")
	ErrReserved      = errors.New("namespace name is reserved")
	// ErrAlreadyRevoked is returned by RevokeKey for a key revoked before.
	ErrAlreadyRevoked = errors.New("already revoked")
)

// Org is an organisation: the owner of keys, namespaces, devices and numbers.
type Org struct {
	ID              string
	Name            string
	TOTPDeviceLimit int
	TOTPEnabled     bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Namespace is an inbox: mail to *@<name>.<mail domain> lands in it.
type Namespace struct {
	ID              string
	OrgID           string
	Name            string
	RetentionTime   int  // seconds
	QuotaLimit      *int // nil: the server default
	CaptureRawEmail bool
	SharedOrgID     string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// VisibleTo reports whether an organisation may read the namespace.
func (n Namespace) VisibleTo(orgID string) bool {
	return n.OrgID == orgID || (n.SharedOrgID != "" && n.SharedOrgID == orgID)
}

// Service is the tenancy store.
type Service struct {
	db           *store.DB
	key          *secret.Key
	retentionMax int // seconds
}

// NewService returns the tenancy service. retentionMax bounds retention_time.
func NewService(db *store.DB, key *secret.Key, retentionMax time.Duration) *Service {
	return &Service{db: db, key: key, retentionMax: int(retentionMax / time.Second)}
}

// RetentionMax is the largest retention_time a namespace may set, in seconds.
func (s *Service) RetentionMax() int { return s.retentionMax }

// NewID returns a UUID version 7, the form of every id (contract section 4).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

var nsNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// reservedNames are path words of the API that a namespace may not take.
var reservedNames = map[string]bool{"outbound": true, "send": true, "share": true}

// NormalizeNamespaceName lower-cases name and checks it is a DNS label that is not
// reserved (contract section 5).
func NormalizeNamespaceName(name string) (string, error) {
	n := strings.ToLower(name)
	if !nsNameRE.MatchString(n) {
		return "", ErrNamespaceName
	}
	if reservedNames[n] {
		return "", ErrReserved
	}
	return n, nil
}

// CreateOrg creates an organisation.
func (s *Service) CreateOrg(ctx context.Context, name string, deviceLimit int, totpEnabled bool) (Org, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return Org{}, errors.New("organisation name must be 1 to 200 characters")
	}
	if deviceLimit < 0 {
		return Org{}, errors.New("device limit must not be negative")
	}
	now := store.NowMillis()
	o := Org{ID: NewID(), Name: name, TOTPDeviceLimit: deviceLimit, TOTPEnabled: totpEnabled,
		CreatedAt: time.UnixMilli(now), UpdatedAt: time.UnixMilli(now)}
	_, err := s.db.Exec(ctx, `INSERT INTO orgs (id, name, totp_device_limit, totp_enabled, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`, o.ID, o.Name, o.TOTPDeviceLimit, o.TOTPEnabled, now, now)
	if store.IsUniqueViolation(err) {
		return Org{}, fmt.Errorf("organisation %q: %w", name, ErrNameTaken)
	}
	if err != nil {
		return Org{}, fmt.Errorf("create organisation: %w", err)
	}
	return o, nil
}

// UpdateOrg changes an organisation's TOTP settings; nil leaves a value as it is.
func (s *Service) UpdateOrg(ctx context.Context, name string, deviceLimit *int, totpEnabled *bool) (Org, error) {
	o, err := s.OrgByName(ctx, name)
	if err != nil {
		return Org{}, err
	}
	if deviceLimit != nil {
		if *deviceLimit < 0 {
			return Org{}, errors.New("device limit must not be negative")
		}
		o.TOTPDeviceLimit = *deviceLimit
	}
	if totpEnabled != nil {
		o.TOTPEnabled = *totpEnabled
	}
	now := store.NowMillis()
	o.UpdatedAt = time.UnixMilli(now)
	_, err = s.db.Exec(ctx, "UPDATE orgs SET totp_device_limit = ?, totp_enabled = ?, updated_at = ? WHERE id = ?",
		o.TOTPDeviceLimit, o.TOTPEnabled, now, o.ID)
	if err != nil {
		return Org{}, fmt.Errorf("update organisation: %w", err)
	}
	return o, nil
}

const orgColumns = "id, name, totp_device_limit, totp_enabled, created_at, updated_at"

// ListOrgs lists every organisation, by name.
func (s *Service) ListOrgs(ctx context.Context) ([]Org, error) {
	rows, err := s.db.Query(ctx, "SELECT id, name, totp_device_limit, totp_enabled, created_at, updated_at FROM orgs ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list organisations: %w", err)
	}
	defer rows.Close()
	var out []Org
	for rows.Next() {
		o, err := scanOrg(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func scanOrg(row interface{ Scan(...any) error }) (Org, error) {
	var o Org
	var created, updated int64
	err := row.Scan(&o.ID, &o.Name, &o.TOTPDeviceLimit, &o.TOTPEnabled, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Org{}, ErrNotFound
	}
	o.CreatedAt, o.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return o, err
}

// OrgByName finds an organisation by its name.
func (s *Service) OrgByName(ctx context.Context, name string) (Org, error) {
	o, err := scanOrg(s.db.QueryRow(ctx, "SELECT "+orgColumns+" FROM orgs WHERE name = ?", name))
	if err != nil {
		return Org{}, fmt.Errorf("organisation %q: %w", name, err)
	}
	return o, nil
}

// OrgByID finds an organisation by id.
func (s *Service) OrgByID(ctx context.Context, id string) (Org, error) {
	return scanOrg(s.db.QueryRow(ctx, "SELECT "+orgColumns+" FROM orgs WHERE id = ?", id))
}

// KeyPrefix starts every API key, so a leaked key is easy to recognise in a scan.
const KeyPrefix = "cbx_"

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateKey creates an API key for the organisation and returns its id and the key,
// which is never shown again. A non-empty key is used as given (bootstrap from
// CATCHBOX_API_KEY).
func (s *Service) CreateKey(ctx context.Context, orgID, label, key string) (id, plain string, err error) {
	if key == "" {
		var b [25]byte
		rand.Read(b[:])
		key = KeyPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	}
	if len(key) < 8 {
		return "", "", errors.New("an API key must be at least 8 characters")
	}
	id = NewID()
	_, err = s.db.Exec(ctx, "INSERT INTO api_keys (id, org_id, key_hash, label, created_at) VALUES (?, ?, ?, ?, ?)",
		id, orgID, hashKey(key), label, store.NowMillis())
	if store.IsUniqueViolation(err) {
		return "", "", errors.New("that API key is already in use")
	}
	if err != nil {
		return "", "", fmt.Errorf("create API key: %w", err)
	}
	return id, key, nil
}

// RevokeKey revokes the key with the given id; requests with it get 401 from
// then on. A key revoked before is ErrAlreadyRevoked, an unknown id ErrNotFound.
func (s *Service) RevokeKey(ctx context.Context, id string) error {
	res, err := s.db.Exec(ctx, "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", store.NowMillis(), id)
	if err != nil {
		return fmt.Errorf("revoke API key: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var revoked sql.NullInt64
	err = s.db.QueryRow(ctx, "SELECT revoked_at FROM api_keys WHERE id = ?", id).Scan(&revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("API key %s: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("revoke API key: %w", err)
	}
	return fmt.Errorf("API key %s was revoked at %s: %w", id, time.UnixMilli(revoked.Int64).UTC().Format(time.RFC3339), ErrAlreadyRevoked)
}

// lastUsedEvery is how stale a key's last_used_at may get: a key is marked
// used at most once per period, so a busy key costs no write per request.
const lastUsedEvery = time.Minute

// Authenticate returns the organisation of a valid, unrevoked key.
func (s *Service) Authenticate(ctx context.Context, key string) (Org, error) {
	_, o, err := s.authenticateKey(ctx, key)
	return o, err
}

// authenticateKey returns the id of a valid, unrevoked key and its organisation.
func (s *Service) authenticateKey(ctx context.Context, key string) (keyID string, o Org, err error) {
	if key == "" || len(key) > 256 {
		return "", Org{}, ErrNotFound
	}
	var created, updated int64
	var used sql.NullInt64
	err = s.db.QueryRow(ctx, `SELECT k.id, k.last_used_at, o.id, o.name, o.totp_device_limit, o.totp_enabled, o.created_at, o.updated_at
		FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.key_hash = ? AND k.revoked_at IS NULL`, hashKey(key)).
		Scan(&keyID, &used, &o.ID, &o.Name, &o.TOTPDeviceLimit, &o.TOTPEnabled, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return "", Org{}, ErrNotFound
	}
	if err != nil {
		return "", Org{}, fmt.Errorf("authenticate API key: %w", err)
	}
	o.CreatedAt, o.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	if now := store.NowMillis(); !used.Valid || now-used.Int64 >= lastUsedEvery.Milliseconds() {
		// Best effort: a failed mark must not fail the request it belongs to.
		if _, err := s.db.Exec(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", now, keyID); err != nil && ctx.Err() == nil {
			slog.Warn("Could not record an API key's last use", "key_id", keyID, "err", err)
		}
	}
	return keyID, o, nil
}

// Key is an API key as listed (catchbox admin key list, the dashboard): never
// the key itself, which only its hash in the store could give.
type Key struct {
	ID        string
	Label     string
	CreatedAt time.Time
	LastUsed  *time.Time
	RevokedAt *time.Time
}

// ListKeys lists the organisation's API keys, newest first; revoked ones too
// when withRevoked.
func (s *Service) ListKeys(ctx context.Context, orgID string, withRevoked bool) ([]Key, error) {
	where := "org_id = ?"
	if !withRevoked {
		where += " AND revoked_at IS NULL"
	}
	return s.listKeys(ctx, where, orgID)
}

// listKeys lists the keys that where (a condition on api_keys) selects,
// newest first.
func (s *Service) listKeys(ctx context.Context, where string, args ...any) ([]Key, error) {
	rows, err := s.db.Query(ctx, "SELECT id, label, created_at, last_used_at, revoked_at FROM api_keys WHERE "+where+
		" ORDER BY created_at DESC, id DESC", args...)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	defer rows.Close()
	var out []Key
	for rows.Next() {
		var k Key
		var created int64
		var used, revoked sql.NullInt64
		if err := rows.Scan(&k.ID, &k.Label, &created, &used, &revoked); err != nil {
			return nil, err
		}
		k.CreatedAt = time.UnixMilli(created)
		if used.Valid {
			t := time.UnixMilli(used.Int64)
			k.LastUsed = &t
		}
		if revoked.Valid {
			t := time.UnixMilli(revoked.Int64)
			k.RevokedAt = &t
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

const nsColumns = "id, org_id, name, retention_time, quota_limit, capture_raw_email, shared_org_id, created_at, updated_at"

func scanNamespace(row interface{ Scan(...any) error }) (Namespace, error) {
	var n Namespace
	var quota sql.NullInt64
	var shared sql.NullString
	var created, updated int64
	err := row.Scan(&n.ID, &n.OrgID, &n.Name, &n.RetentionTime, &quota, &n.CaptureRawEmail, &shared, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Namespace{}, ErrNotFound
	}
	if err != nil {
		return Namespace{}, err
	}
	if quota.Valid {
		q := int(quota.Int64)
		n.QuotaLimit = &q
	}
	n.SharedOrgID = shared.String
	n.CreatedAt, n.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return n, nil
}

// NamespaceByName finds a namespace by name (case-insensitive), whoever owns it.
func (s *Service) NamespaceByName(ctx context.Context, name string) (Namespace, error) {
	return scanNamespace(s.db.QueryRow(ctx, "SELECT "+nsColumns+" FROM namespaces WHERE name = ?", strings.ToLower(name)))
}

// NamespaceByID finds a namespace by id.
func (s *Service) NamespaceByID(ctx context.Context, id string) (Namespace, error) {
	return scanNamespace(s.db.QueryRow(ctx, "SELECT "+nsColumns+" FROM namespaces WHERE id = ?", id))
}

// VisibleNamespace finds a namespace the organisation may read; another
// organisation's namespace is ErrNotFound, never revealed.
func (s *Service) VisibleNamespace(ctx context.Context, orgID, name string) (Namespace, error) {
	n, err := s.NamespaceByName(ctx, name)
	if err != nil {
		return Namespace{}, err
	}
	if !n.VisibleTo(orgID) {
		return Namespace{}, ErrNotFound
	}
	return n, nil
}

// ListNamespaces returns the namespaces the organisation may read, by name: its
// own, and those another organisation shares with it.
func (s *Service) ListNamespaces(ctx context.Context, orgID string) ([]Namespace, error) {
	rows, err := s.db.Query(ctx, "SELECT "+nsColumns+" FROM namespaces WHERE org_id = ? OR shared_org_id = ? ORDER BY name", orgID, orgID)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	defer rows.Close()
	var out []Namespace
	for rows.Next() {
		n, err := scanNamespace(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Settings is a change to a namespace's settings; nil fields are left as they are
// (on creation: the defaults). ClearQuota sets quota_limit back to the default.
type Settings struct {
	RetentionTime   *int
	QuotaLimit      *int
	ClearQuota      bool
	CaptureRawEmail *bool
}

// checkSettings checks the settings' bounds: the Invalid error naming the
// first field at fault (retention_time before quota_limit), nil when they
// are within them.
func (s *Service) checkSettings(st Settings) error {
	if st.RetentionTime != nil && (*st.RetentionTime < MinRetention || *st.RetentionTime > s.retentionMax) {
		return problem.Field("retention_time", fmt.Sprintf("must be between %d and %d seconds", MinRetention, s.retentionMax))
	}
	if st.QuotaLimit != nil && (*st.QuotaLimit < 1 || *st.QuotaLimit > MaxQuotaLimit) {
		return problem.Field("quota_limit", fmt.Sprintf("must be between 1 and %d, or null for the server default", MaxQuotaLimit))
	}
	return nil
}

// UpsertNamespace creates the namespace for the organisation when the name is free,
// or updates it when the organisation owns it (contract section 5). A name owned
// by another organisation is ErrNameTaken.
func (s *Service) UpsertNamespace(ctx context.Context, orgID, name string, st Settings) (Namespace, error) {
	name, err := NormalizeNamespaceName(name)
	if err != nil {
		return Namespace{}, err
	}
	if err := s.checkSettings(st); err != nil {
		return Namespace{}, err
	}
	for attempt := 0; attempt < 3; attempt++ {
		n, err := s.NamespaceByName(ctx, name)
		if errors.Is(err, ErrNotFound) {
			n, err = s.insertNamespace(ctx, orgID, name, st)
			if store.IsUniqueViolation(err) {
				continue // created concurrently: look again
			}
			return n, err
		}
		if err != nil {
			return Namespace{}, err
		}
		if n.OrgID != orgID {
			return Namespace{}, ErrNameTaken
		}
		applySettings(&n, st)
		now := store.NowMillis()
		n.UpdatedAt = time.UnixMilli(now)
		_, err = s.db.Exec(ctx, "UPDATE namespaces SET retention_time = ?, quota_limit = ?, capture_raw_email = ?, updated_at = ? WHERE id = ?",
			n.RetentionTime, nullInt(n.QuotaLimit), n.CaptureRawEmail, now, n.ID)
		if err != nil {
			return Namespace{}, fmt.Errorf("update namespace: %w", err)
		}
		return n, nil
	}
	return Namespace{}, ErrNameTaken
}

// CreateNamespace creates a namespace; a taken name is ErrNameTaken.
func (s *Service) CreateNamespace(ctx context.Context, orgID, name string, st Settings) (Namespace, error) {
	name, err := NormalizeNamespaceName(name)
	if err != nil {
		return Namespace{}, err
	}
	if err := s.checkSettings(st); err != nil {
		return Namespace{}, err
	}
	n, err := s.insertNamespace(ctx, orgID, name, st)
	if store.IsUniqueViolation(err) {
		return Namespace{}, ErrNameTaken
	}
	return n, err
}

func applySettings(n *Namespace, st Settings) {
	if st.RetentionTime != nil {
		n.RetentionTime = *st.RetentionTime
	}
	if st.ClearQuota {
		n.QuotaLimit = nil
	}
	if st.QuotaLimit != nil {
		q := *st.QuotaLimit
		n.QuotaLimit = &q
	}
	if st.CaptureRawEmail != nil {
		n.CaptureRawEmail = *st.CaptureRawEmail
	}
}

func (s *Service) insertNamespace(ctx context.Context, orgID, name string, st Settings) (Namespace, error) {
	now := store.NowMillis()
	n := Namespace{ID: NewID(), OrgID: orgID, Name: name, RetentionTime: DefaultRetention, CaptureRawEmail: true,
		CreatedAt: time.UnixMilli(now), UpdatedAt: time.UnixMilli(now)}
	if n.RetentionTime > s.retentionMax {
		n.RetentionTime = s.retentionMax
	}
	applySettings(&n, st)
	_, err := s.db.Exec(ctx, `INSERT INTO namespaces (id, org_id, name, retention_time, quota_limit, capture_raw_email, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, n.ID, orgID, name, n.RetentionTime, nullInt(n.QuotaLimit), n.CaptureRawEmail, now, now)
	if err != nil {
		return Namespace{}, err
	}
	return n, nil
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// ErrShareWithOwner is returned when a namespace would be shared with the
// organisation that owns it.
var ErrShareWithOwner = errors.New("a namespace cannot be shared with the organisation that owns it")

// ShareNamespace lets a second organisation read the namespace: search, latest,
// single emails, attachments and raw source, as its owner does. It may not change
// the namespace's settings nor get its SMTP credentials. A namespace is shared
// with one organisation at a time; sharing again replaces it, and an empty
// withOrgID stops sharing.
func (s *Service) ShareNamespace(ctx context.Context, name, withOrgID string) (Namespace, error) {
	n, err := s.NamespaceByName(ctx, name)
	if err != nil {
		return Namespace{}, fmt.Errorf("namespace %q: %w", name, err)
	}
	if withOrgID == n.OrgID {
		return Namespace{}, ErrShareWithOwner
	}
	var shared any
	if withOrgID != "" {
		shared = withOrgID
	}
	now := store.NowMillis()
	if _, err := s.db.Exec(ctx, "UPDATE namespaces SET shared_org_id = ?, updated_at = ? WHERE id = ?", shared, now, n.ID); err != nil {
		return Namespace{}, fmt.Errorf("share namespace: %w", err)
	}
	n.SharedOrgID, n.UpdatedAt = withOrgID, time.UnixMilli(now)
	return n, nil
}

// SMTPPassword is the namespace's SMTP AUTH password: derived from the server key
// and the namespace id, so nothing secret is stored and every replica agrees.
func (s *Service) SMTPPassword(n Namespace) string {
	return s.key.Derive(18, "smtp-password", n.ID)
}

// Bootstrap prepares an empty store on first start: organisation "default",
// namespace "default" and an API key (apiKey, or a generated one); the
// service then makes the organisation's owner (EnsureOwner). It returns the
// key when it created one, "" when the store was not empty. Safe when several
// replicas start at once: only one creates.
func (s *Service) Bootstrap(ctx context.Context, apiKey string) (string, error) {
	var n int
	if err := s.db.QueryRow(ctx, "SELECT COUNT(*) FROM orgs").Scan(&n); err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	if n > 0 {
		return "", nil
	}
	o, err := s.CreateOrg(ctx, DefaultName, DefaultTOTPDeviceLimit, true)
	if errors.Is(err, ErrNameTaken) {
		return "", nil // another replica won
	}
	if err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	if _, err := s.CreateNamespace(ctx, o.ID, DefaultName, Settings{}); err != nil {
		// Another replica starting at the same time may have made the
		// namespace in this organisation meanwhile (its catch-all, in local
		// mode): that is the namespace wanted.
		n, nerr := s.NamespaceByName(ctx, DefaultName)
		if !errors.Is(err, ErrNameTaken) || nerr != nil || n.OrgID != o.ID {
			return "", fmt.Errorf("bootstrap namespace: %w", err)
		}
	}
	_, key, err := s.CreateKey(ctx, o.ID, "bootstrap", apiKey)
	if err != nil {
		return "", fmt.Errorf("bootstrap key: %w", err)
	}
	return key, nil
}

package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/problem"
)

// The operations on an organisation's API keys and namespaces: each action a
// user can take is one call taking the principal acting and a typed request,
// and returning a typed result or a *problem.Error. The HTTP API, the
// dashboard and the admin command line (acting as the organisation) call
// them and only translate; the functions they are built on (CreateKey,
// UpsertNamespace, ShareNamespace) trust their caller and check nothing of
// who asks.

// MaxKeyLabel bounds an API key's label, in bytes.
const MaxKeyLabel = 200

// acting is the organisation the principal acts for; a principal without one
// (no credential was checked) may do nothing.
func acting(p Principal) (Org, error) {
	if p.Org.ID == "" {
		return Org{}, problem.Errorf(problem.Unauthenticated, "unauthenticated", "no organisation to act for")
	}
	return p.Org, nil
}

// CreateKeyRequest asks for a new API key of the principal's organisation.
type CreateKeyRequest struct {
	// Label is a note on what the key is for: at most MaxKeyLabel bytes,
	// spaces around it dropped.
	Label string
}

// NewKey is an API key just created. Key is the key itself, shown this once:
// only its hash is kept.
type NewKey struct {
	ID    string
	Key   string
	Label string
	Org   Org
}

// CreateKeyFor creates an API key of the principal's organisation.
func (s *Service) CreateKeyFor(ctx context.Context, p Principal, req CreateKeyRequest) (NewKey, error) {
	org, err := acting(p)
	if err != nil {
		return NewKey{}, err
	}
	label := strings.TrimSpace(req.Label)
	if len(label) > MaxKeyLabel {
		return NewKey{}, problem.Field("label", fmt.Sprintf("must be at most %d characters", MaxKeyLabel))
	}
	id, key, err := s.CreateKey(ctx, org.ID, label, "")
	if err != nil {
		return NewKey{}, err
	}
	return NewKey{ID: id, Key: key, Label: label, Org: org}, nil
}

// RevokeKeyRequest names the API key to revoke.
type RevokeKeyRequest struct {
	ID string
}

// RevokeKeyFor revokes one of the principal organisation's API keys: requests
// with it are refused from then on. A key of another organisation, or none,
// is not found; a key revoked before is a conflict (already_revoked), and
// stays revoked as it was.
func (s *Service) RevokeKeyFor(ctx context.Context, p Principal, req RevokeKeyRequest) (Key, error) {
	org, err := acting(p)
	if err != nil {
		return Key{}, err
	}
	notFound := problem.NotFoundf("API key")
	k, err := s.orgKey(ctx, org.ID, req.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		return Key{}, notFound
	case err != nil:
		return Key{}, err
	case k.RevokedAt != nil:
		return Key{}, problem.Errorf(problem.Conflict, "already_revoked", "API key %s was already revoked at %s",
			k.ID, k.RevokedAt.UTC().Format(time.RFC3339))
	}
	err = s.RevokeKey(ctx, k.ID)
	switch {
	case errors.Is(err, ErrAlreadyRevoked):
		// Revoked by another request since orgKey read it.
		return Key{}, problem.Errorf(problem.Conflict, "already_revoked", "API key %s was already revoked", k.ID)
	case errors.Is(err, ErrNotFound):
		return Key{}, notFound
	case err != nil:
		return Key{}, err
	}
	return s.orgKey(ctx, org.ID, k.ID)
}

// orgKey is one of the organisation's keys, revoked or not; ErrNotFound when
// the organisation has none of that id.
func (s *Service) orgKey(ctx context.Context, orgID, id string) (Key, error) {
	keys, err := s.listKeys(ctx, "id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return Key{}, err
	}
	if len(keys) == 0 {
		return Key{}, ErrNotFound
	}
	return keys[0], nil
}

// KeyOrg is the organisation an API key belongs to, revoked or not, for the
// admin command line, which names a key by its id alone.
func (s *Service) KeyOrg(ctx context.Context, keyID string) (Org, error) {
	o, err := scanOrg(s.db.QueryRow(ctx, "SELECT o.id, o.name, o.totp_device_limit, o.totp_enabled, o.created_at, o.updated_at "+
		"FROM api_keys k JOIN orgs o ON o.id = k.org_id WHERE k.id = ?", keyID))
	if err != nil {
		return Org{}, fmt.Errorf("API key %s: %w", keyID, err)
	}
	return o, nil
}

// NamespaceRequest names a namespace and the settings to create it with or
// change; nil settings are left as they are (on creation: the defaults).
type NamespaceRequest struct {
	Name     string
	Settings Settings
}

// CreateNamespaceFor creates a namespace of the principal's organisation; a
// name already taken, by this organisation or another, is a conflict
// (namespace_taken).
func (s *Service) CreateNamespaceFor(ctx context.Context, p Principal, req NamespaceRequest) (Namespace, error) {
	org, err := acting(p)
	if err != nil {
		return Namespace{}, err
	}
	if err := s.checkSettings(req.Settings); err != nil {
		return Namespace{}, err
	}
	n, err := s.CreateNamespace(ctx, org.ID, req.Name, req.Settings)
	if errors.Is(err, ErrNameTaken) {
		return Namespace{}, problem.Errorf(problem.Conflict, "namespace_taken", "namespace %s is taken", quoteName(req.Name))
	}
	return n, nameProblem(req.Name, err)
}

// SaveNamespaceFor creates the namespace for the principal's organisation
// when the name is free, or changes its settings when the organisation owns
// it (POST /api/namespace/{namespace}/settings, contract section 5). A name
// another organisation owns, even one shared with this one, is a conflict
// (namespace_taken).
func (s *Service) SaveNamespaceFor(ctx context.Context, p Principal, req NamespaceRequest) (Namespace, error) {
	org, err := acting(p)
	if err != nil {
		return Namespace{}, err
	}
	if err := s.checkSettings(req.Settings); err != nil {
		return Namespace{}, err
	}
	n, err := s.UpsertNamespace(ctx, org.ID, req.Name, req.Settings)
	if errors.Is(err, ErrNameTaken) {
		return Namespace{}, problem.Errorf(problem.Conflict, "namespace_taken", "namespace %s belongs to another organisation", quoteName(req.Name))
	}
	return n, nameProblem(req.Name, err)
}

// UpdateNamespaceFor changes the settings of a namespace the principal's
// organisation owns. One it cannot see is not found; one another
// organisation shares with it is forbidden (namespace_read_only).
func (s *Service) UpdateNamespaceFor(ctx context.Context, p Principal, req NamespaceRequest) (Namespace, error) {
	n, err := s.OwnNamespace(ctx, p, req.Name)
	if err != nil {
		return Namespace{}, err
	}
	if err := s.checkSettings(req.Settings); err != nil {
		return Namespace{}, err
	}
	return s.UpsertNamespace(ctx, n.OrgID, n.Name, req.Settings)
}

// ShareNamespaceRequest names a namespace of the principal's organisation and
// the organisation that may read it from now on; With "" stops sharing.
type ShareNamespaceRequest struct {
	Name string
	With string // organisation id
}

// ShareNamespaceFor lets a second organisation read a namespace the
// principal's organisation owns: search, latest, single emails, attachments
// and raw source, as its owner does, but neither change its settings nor get
// its SMTP credentials. A namespace is shared with one organisation at a
// time; sharing again replaces it. An unknown organisation is not found;
// the owner itself is an invalid field (with).
func (s *Service) ShareNamespaceFor(ctx context.Context, p Principal, req ShareNamespaceRequest) (Namespace, error) {
	n, err := s.OwnNamespace(ctx, p, req.Name)
	if err != nil {
		return Namespace{}, err
	}
	if req.With == n.OrgID {
		return Namespace{}, problem.Field("with", "must be another organisation than the namespace's owner")
	}
	if req.With != "" {
		if _, err := s.OrgByID(ctx, req.With); errors.Is(err, ErrNotFound) {
			return Namespace{}, problem.NotFoundf("organisation")
		} else if err != nil {
			return Namespace{}, err
		}
	}
	return s.ShareNamespace(ctx, n.Name, req.With)
}

// OwnNamespace is the namespace name of the principal's organisation, for an
// operation that changes it: one the organisation cannot see is not found
// (another's is never revealed), one shared with it is read-only to it
// (namespace_read_only).
func (s *Service) OwnNamespace(ctx context.Context, p Principal, name string) (Namespace, error) {
	org, err := acting(p)
	if err != nil {
		return Namespace{}, err
	}
	n, err := s.VisibleNamespace(ctx, org.ID, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return Namespace{}, problem.NotFoundf("namespace " + quoteName(name))
	case err != nil:
		return Namespace{}, err
	case n.OrgID != org.ID:
		return Namespace{}, ReadOnly(n)
	}
	return n, nil
}

// ReadOnly is the refusal of a change to a namespace another organisation
// shares with the one asking: it may read the namespace, not change it.
func ReadOnly(n Namespace) error {
	return problem.Errorf(problem.Forbidden, "namespace_read_only", "namespace %q is shared with your organisation for reading only", n.Name)
}

// nameProblem is the refusal of a namespace name (not a DNS label, or a path
// word of the API), naming the field; any other error is returned as it is.
func nameProblem(name string, err error) error {
	switch {
	case errors.Is(err, ErrNamespaceName):
		return &problem.Error{Kind: problem.Invalid, Code: "invalid_namespace",
			Message: "namespace " + quoteName(name) + " is not valid: " + ErrNamespaceName.Error(),
			Fields:  []problem.FieldError{{Field: "namespace", Detail: ErrNamespaceName.Error()}}}
	case errors.Is(err, ErrReserved):
		return &problem.Error{Kind: problem.Invalid, Code: "namespace_reserved",
			Message: "namespace " + quoteName(name) + " is reserved",
			Fields:  []problem.FieldError{{Field: "namespace", Detail: "is reserved (outbound, send and share are path words of the API)"}}}
	}
	return err
}

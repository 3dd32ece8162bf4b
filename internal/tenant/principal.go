package tenant

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/limit"
)

// Principal is who a request is, as authentication found it: an organisation's
// API key, or a signed-in user with the organisations they belong to. Every
// handler reads it (PrincipalFrom, or OrgFrom for the organisation a request
// acts for), whatever credential the request carried.
type Principal struct {
	// Org is the organisation the request acts for: the key's, or for a user
	// the one named by organisation_id, else the first they belong to.
	Org Org
	// KeyID is the id of the API key, "" for a user.
	KeyID string
	// User is the signed-in user, nil for an API key.
	User *User
	// Orgs are the organisations the user belongs to, by name; for a key, its own.
	Orgs []Org
	// Session is the SHA-256 of the user's session token ("" for a key): it
	// names the session to end at sign-out without holding the token.
	Session string
	// OrgNamed tells whether the request named its organisation
	// (organisation_id), as a user's outbound list must.
	OrgNamed bool
}

// ID names the principal for the request limits: the key id, or the user's id.
// It never holds a secret.
func (p Principal) ID() string {
	if p.User != nil {
		return "user:" + p.User.ID
	}
	return p.KeyID
}

// Member reports whether the principal may act for the organisation.
func (p Principal) Member(orgID string) (Org, bool) {
	for _, o := range p.Orgs {
		if o.ID == orgID {
			return o, true
		}
	}
	return Org{}, false
}

type principalKey struct{}

// WithPrincipal stores the principal in ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the request's principal; the zero Principal when the
// request was not authenticated.
func PrincipalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// OrgFrom returns the organisation the request acts for (Principal.Org).
func OrgFrom(ctx context.Context) Org { return PrincipalFrom(ctx).Org }

// RequireKey is the X-Api-Key middleware: a missing, unknown or revoked key is 401
// with WWW-Authenticate; a valid one puts its principal in the context.
func (s *Service) RequireKey(next http.Handler) http.Handler {
	return s.requireAPI(next, nil)
}

// RequireAPI authenticates an API request by its X-Api-Key or, without one, by
// a dashboard session cookie (sessions). A session request may name the
// organisation it acts for with organisation_id, one the user belongs to (403
// otherwise); it is refused when it changes state from another origin
// (http.CrossOriginProtection), as the dashboard's forms are. Neither is 401.
func (s *Service) RequireAPI(sessions *Sessions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return s.requireAPI(next, sessions) }
}

func (s *Service) requireAPI(next http.Handler, sessions *Sessions) http.Handler {
	var csrf *http.CrossOriginProtection
	if sessions != nil {
		csrf = sessions.CrossOrigin
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		if key == "" && sessions != nil {
			if p, ok, err := sessions.Authenticate(r); err != nil {
				httpx.WriteError(w, r, err)
				return
			} else if ok {
				if err := csrf.Check(r); err != nil {
					httpx.WriteError(w, r, httpx.Errorf(http.StatusForbidden, "cross_origin_request", "cross-origin requests with a session are refused"))
					return
				}
				p, err := ActFor(p, r.URL.Query().Get("organisation_id"))
				if err != nil {
					httpx.WriteError(w, r, err)
					return
				}
				next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
				return
			}
		}
		if key == "" {
			httpx.WriteError(w, r, httpx.Errorf(http.StatusUnauthorized, "missing_api_key", "the X-Api-Key header is required"))
			return
		}
		keyID, o, err := s.authenticateKey(r.Context(), key)
		if errors.Is(err, ErrNotFound) {
			httpx.WriteError(w, r, httpx.Errorf(http.StatusUnauthorized, "invalid_api_key", "the API key is not valid"))
			return
		}
		if err != nil {
			httpx.WriteError(w, r, err)
			return
		}
		limit.Refund(r.Context()) // a good key costs no attempt
		if n := httpx.Noted(r.Context()); n != nil {
			n.KeyID = keyID // the access log names the key by its id, never the key
		}
		p := Principal{Org: o, KeyID: keyID, Orgs: []Org{o}}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// ActFor makes a user's principal act for the organisation orgID names: one
// they belong to, else 403. An empty orgID, or one that is not a UUID (the
// handler reports it), leaves the principal acting for its first organisation.
func ActFor(p Principal, orgID string) (Principal, error) {
	if orgID == "" {
		return p, nil
	}
	if _, err := uuid.Parse(orgID); err != nil {
		return p, nil
	}
	o, ok := p.Member(normalizeUUID(orgID))
	if !ok {
		return p, httpx.Errorf(http.StatusForbidden, "organisation_forbidden", "you are not a member of that organisation")
	}
	p.Org, p.OrgNamed = o, true
	return p, nil
}

func normalizeUUID(s string) string {
	u, err := uuid.Parse(s)
	if err != nil {
		return s
	}
	return u.String()
}

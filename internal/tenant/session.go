package tenant

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/store"
)

// SessionCookie is the name of the dashboard's session cookie.
const SessionCookie = "catchbox_session"

// Session lifetimes: a session ends IdleTimeout after its last request, and
// MaxAge after sign-in whatever happens.
const (
	DefaultSessionIdle   = 24 * time.Hour
	DefaultSessionMaxAge = 7 * 24 * time.Hour
	// seenEvery is how stale last_seen_at may get before a request writes it:
	// a session's requests do not each cost a write.
	seenEvery = time.Minute
)

// Sign-in throttling: failed attempts are counted per address signed in as
// and per client address, in token buckets (internal/limit). A bucket that is
// empty refuses every attempt, right or wrong, until it refills, so a guess
// that happens to be right is not told apart from the wrong ones.
const (
	emailFailures     = 5               // failures an address may take at once
	emailFailureEvery = time.Minute     // and one more each
	addrFailures      = 20              // failures a client address may make at once
	addrFailureEvery  = 6 * time.Second // and one more each
)

// ErrThrottled is returned by SignIn while too many attempts failed.
type ErrThrottled struct{ Retry time.Duration }

func (e *ErrThrottled) Error() string {
	return fmt.Sprintf("too many failed sign-in attempts; try again in %d s", limit.RetryAfter(e.Retry))
}

// Sessions signs dashboard users in and out and finds the user of a request.
// A session is a random token in an HttpOnly, SameSite=Lax cookie (Secure when
// served over https); the store keeps its SHA-256 only.
type Sessions struct {
	Tenants *Service
	// IdleTimeout and MaxAge bound a session's life.
	IdleTimeout, MaxAge time.Duration
	// Secure marks the cookie Secure on every response (the public URL is
	// https); a request that came over TLS gets it anyway.
	Secure bool
	// CrossOrigin refuses state-changing requests from other origins
	// (Sec-Fetch-Site, then Origin against Host).
	CrossOrigin *http.CrossOriginProtection
	// ClientAddr names the client of a request for the per-address throttle.
	ClientAddr func(*http.Request) string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	byEmail, byAddr *limit.Buckets
}

// NewSessions returns the sessions of the service's users with the default
// lifetimes and throttles.
func NewSessions(s *Service, secure bool) *Sessions {
	return &Sessions{
		Tenants: s, IdleTimeout: DefaultSessionIdle, MaxAge: DefaultSessionMaxAge, Secure: secure,
		CrossOrigin: http.NewCrossOriginProtection(),
		ClientAddr:  func(r *http.Request) string { return r.RemoteAddr },
		byEmail:     limit.New(1/emailFailureEvery.Seconds(), emailFailures),
		byAddr:      limit.New(1/addrFailureEvery.Seconds(), addrFailures),
	}
}

// SetClock sets the clock of the sessions and their throttles (tests).
func (ss *Sessions) SetClock(now func() time.Time) {
	ss.Now, ss.byEmail.Now, ss.byAddr.Now = now, now, now
}

func (ss *Sessions) now() time.Time {
	if ss.Now != nil {
		return ss.Now()
	}
	return time.Now()
}

// SignIn checks the address and password and, when they are right, starts a
// new session and sets its cookie on w. Whatever session cookie the request
// carried is ended first: the session after sign-in is always a new one, so
// a token planted in the browser before (session fixation) signs nobody in.
func (ss *Sessions) SignIn(w http.ResponseWriter, r *http.Request, email, password string) (User, error) {
	ctx := r.Context()
	normal, _ := NormalizeEmail(email)
	if normal == "" {
		normal = email
	}
	addr := ss.ClientAddr(r)
	if retry, ok := ss.byAddr.Ready(addr); !ok {
		return User{}, &ErrThrottled{Retry: retry}
	}
	if retry, ok := ss.byEmail.Ready(normal); !ok {
		return User{}, &ErrThrottled{Retry: retry}
	}
	u, err := ss.Tenants.CheckUser(ctx, email, password)
	if errors.Is(err, ErrBadPassword) {
		ss.byAddr.Take(addr)
		ss.byEmail.Take(normal)
		return User{}, err
	}
	if err != nil {
		return User{}, err
	}
	ss.end(ctx, r)
	token, err := ss.create(ctx, u.ID)
	if err != nil {
		return User{}, err
	}
	ss.setCookie(w, r, token, int(ss.MaxAge/time.Second))
	return u, nil
}

// SignOut ends the request's session and clears its cookie.
func (ss *Sessions) SignOut(w http.ResponseWriter, r *http.Request) error {
	err := ss.end(r.Context(), r)
	ss.setCookie(w, r, "", -1)
	return err
}

func (ss *Sessions) end(ctx context.Context, r *http.Request) error {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return nil
	}
	if _, err := ss.Tenants.db.Exec(ctx, "DELETE FROM sessions WHERE token_hash = ?", hashKey(c.Value)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

func (ss *Sessions) create(ctx context.Context, userID string) (string, error) {
	var b [32]byte
	rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	now := ss.now().UnixMilli()
	_, err := ss.Tenants.db.Exec(ctx, "INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
		hashKey(token), userID, now, now, now+ss.MaxAge.Milliseconds())
	if err != nil {
		return "", fmt.Errorf("start session: %w", err)
	}
	return token, nil
}

func (ss *Sessions) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: ss.Secure || r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// Authenticate returns the principal of the request's session cookie: ok is
// false when there is none, or it is unknown, expired, idle too long, or its
// user belongs to no organisation any more.
func (ss *Sessions) Authenticate(r *http.Request) (Principal, bool, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return Principal{}, false, nil
	}
	ctx := r.Context()
	h := hashKey(c.Value)
	var u User
	var created, seen, expires int64
	err = ss.Tenants.db.QueryRow(ctx, `SELECT u.id, u.email, u.created_at, s.last_seen_at, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`, h).Scan(&u.ID, &u.Email, &created, &seen, &expires)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return Principal{}, false, nil
		}
		return Principal{}, false, fmt.Errorf("find session: %w", err)
	}
	now := ss.now()
	if now.UnixMilli() >= expires || now.Sub(time.UnixMilli(seen)) >= ss.IdleTimeout {
		return Principal{}, false, nil
	}
	if now.Sub(time.UnixMilli(seen)) >= seenEvery {
		if _, err := ss.Tenants.db.Exec(ctx, "UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?", now.UnixMilli(), h); err != nil {
			return Principal{}, false, fmt.Errorf("touch session: %w", err)
		}
	}
	u.CreatedAt = time.UnixMilli(created)
	orgs, err := ss.Tenants.UserOrgs(ctx, u.ID)
	if err != nil {
		return Principal{}, false, err
	}
	if len(orgs) == 0 {
		return Principal{}, false, nil
	}
	return Principal{Org: orgs[0], User: &u, Orgs: orgs, Session: h}, true, nil
}

// ReapSessions deletes the sessions that have ended by now, and the sign-in
// links that have expired unused (a periodic job).
func ReapSessions(ctx context.Context, db *store.DB, now time.Time) (int, error) {
	res, err := db.Exec(ctx, "DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ?",
		now.UnixMilli(), now.Add(-DefaultSessionIdle).UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("delete ended sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := db.Exec(ctx, "DELETE FROM signin_links WHERE expires_at <= ?", now.UnixMilli()); err != nil {
		return int(n), fmt.Errorf("delete expired sign-in links: %w", err)
	}
	return int(n), nil
}

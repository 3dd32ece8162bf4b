package tenant

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/metrics"
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

// Sign-in throttling. Every attempt is charged, before its password is
// hashed, to three token buckets (internal/limit), and the charges are given
// back when the password was right, so that attempts made at once never
// check more passwords than the buckets hold:
//
//   - the client address: 20 attempts at once, then one every 6 s, whatever
//     the accounts;
//   - the account and client address together: 5 at once, then one a
//     minute. A guesser at one address is held to this, and a user signing
//     in from another address is not touched by it: nobody locks a user out
//     by failing from elsewhere;
//   - the account, from every address: 30 at once, then one every 20 s,
//     which only guessers spread over many addresses reach. Once it is
//     empty, an attempt waits for the account's next token (up to
//     accountDelay) rather than being refused, so a user is slowed, not shut
//     out; a browser the user signed in with before (its device cookie,
//     signed by the service) skips this bucket altogether.
//
// An empty address or pair bucket refuses every attempt, right or wrong, until
// it refills, so a guess that happens to be right is not told apart from the
// wrong ones. The budgets count addresses the user has not signed in as as
// well, so that the answer says nothing about which accounts exist.
//
// On SQLite one process serves the store and the buckets live in it. On
// PostgreSQL they live in the store (limit.Shared), so every replica charges
// the same ones: the budgets above are the whole service's, however many
// replicas the attempts are spread over.
const (
	addrFailures        = 20
	addrFailureEvery    = 6 * time.Second
	pairFailures        = 5
	pairFailureEvery    = time.Minute
	accountFailures     = 30
	accountFailureEvery = 20 * time.Second
	// accountDelay is the longest an attempt waits for its account's next
	// token before it is refused, and accountTries the most times it tries.
	accountDelay = 25 * time.Second
	accountTries = 5
)

// DeviceCookie is the cookie that marks a browser which signed in as an
// account before; it lets that browser past the account's own budget.
const DeviceCookie = "catchbox_device"

// deviceCookieAge is how long a device cookie is honoured.
const deviceCookieAge = 90 * 24 * time.Hour

// ErrThrottled is returned by SignIn while too many attempts failed.
type ErrThrottled struct{ Retry time.Duration }

func (e *ErrThrottled) Error() string {
	return fmt.Sprintf("too many failed sign-in attempts; try again in %d s", limit.RetryAfter(e.Retry))
}

// throttle is a set of token buckets attempts are charged to: limit.Buckets
// in the process, or limit.Shared in the store.
type throttle interface {
	Charge(ctx context.Context, key string) (*limit.Charge, error)
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
	// Sleep waits d or until ctx ends (the wait for an account's next token);
	// nil is a timer. A test with its own clock moves that clock instead.
	Sleep func(ctx context.Context, d time.Duration) error

	byAddr, byPair, byAccount throttle
	clocks                    []*func() time.Time
	// arrived and evaluating, when a test sets them, are called as a sign-in
	// attempt arrives, and once it is charged, just before its password is
	// checked.
	arrived, evaluating func()
}

// NewSessions returns the sessions of the service's users with the default
// lifetimes and throttles. clientAddr names the client of a request for the
// per-address throttle (nil: its RemoteAddr).
func NewSessions(s *Service, secure bool, clientAddr func(*http.Request) string) *Sessions {
	if clientAddr == nil {
		clientAddr = func(r *http.Request) string { return r.RemoteAddr }
	}
	ss := &Sessions{
		Tenants: s, IdleTimeout: DefaultSessionIdle, MaxAge: DefaultSessionMaxAge, Secure: secure,
		CrossOrigin: http.NewCrossOriginProtection(),
		ClientAddr:  clientAddr,
	}
	if s.db.Shared() {
		a := limit.NewShared(s.db, "signin-addr", 1/addrFailureEvery.Seconds(), addrFailures)
		p := limit.NewShared(s.db, "signin-pair", 1/pairFailureEvery.Seconds(), pairFailures)
		c := limit.NewShared(s.db, "signin-account", 1/accountFailureEvery.Seconds(), accountFailures)
		ss.byAddr, ss.byPair, ss.byAccount = a, p, c
		ss.clocks = []*func() time.Time{&a.Now, &p.Now, &c.Now}
	} else {
		a := limit.New(1/addrFailureEvery.Seconds(), addrFailures)
		p := limit.New(1/pairFailureEvery.Seconds(), pairFailures)
		c := limit.New(1/accountFailureEvery.Seconds(), accountFailures)
		ss.byAddr, ss.byPair, ss.byAccount = a, p, c
		ss.clocks = []*func() time.Time{&a.Now, &p.Now, &c.Now}
	}
	return ss
}

// SetClock sets the clock of the sessions and their throttles (tests).
func (ss *Sessions) SetClock(now func() time.Time) {
	ss.Now = now
	for _, c := range ss.clocks {
		*c = now
	}
}

func (ss *Sessions) now() time.Time {
	if ss.Now != nil {
		return ss.Now()
	}
	return time.Now()
}

func (ss *Sessions) sleep(ctx context.Context, d time.Duration) error {
	if ss.Sleep != nil {
		return ss.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SignIn checks the address and password and, when they are right, starts a
// new session and sets its cookie on w. Whatever session cookie the request
// carried is ended first: the session after sign-in is always a new one, so
// a token planted in the browser before (session fixation) signs nobody in.
//
// The attempt is charged to the throttles before the password is checked
// (*ErrThrottled when one is empty), and waits for the process's hash gate
// (ErrBusy when it is full). A right password gives the charges back.
func (ss *Sessions) SignIn(w http.ResponseWriter, r *http.Request, email, password string) (User, error) {
	ctx := r.Context()
	if ss.arrived != nil {
		ss.arrived()
	}
	normal, _ := NormalizeEmail(email)
	if normal == "" {
		normal = "!invalid" // no account has it: one bucket for every such attempt
	}
	charges, err := ss.charge(ctx, r, normal)
	defer func() {
		for _, c := range charges {
			c.Settle()
		}
	}()
	var throttled *ErrThrottled
	if errors.As(err, &throttled) {
		metrics.Auth("signin", "throttled")
	}
	if err != nil {
		return User{}, err
	}
	if ss.evaluating != nil {
		ss.evaluating()
	}
	u, err := ss.Tenants.CheckUser(ctx, email, password)
	if errors.Is(err, ErrBadPassword) {
		metrics.Auth("signin", "failed")
		return User{}, err // the charges stay spent
	}
	for _, c := range charges {
		c.Refund() // right, or not checked at all (busy, a store error)
	}
	if errors.Is(err, ErrBusy) {
		metrics.Auth("signin", "busy")
	}
	if err != nil {
		return User{}, err
	}
	metrics.Auth("signin", "ok")
	ss.end(ctx, r)
	token, err := ss.create(ctx, u.ID)
	if err != nil {
		return User{}, err
	}
	ss.setCookie(w, r, token, int(ss.MaxAge/time.Second))
	ss.setDevice(w, r, normal)
	return u, nil
}

// charge charges an attempt to sign in as account to its throttles, in
// order: the client address, the pair, then the account (unless the browser
// has the account's device cookie), waiting up to accountDelay for the
// account's next token. When one refuses, the charges already taken are given
// back (the attempt is not evaluated) and the error is *ErrThrottled.
func (ss *Sessions) charge(ctx context.Context, r *http.Request, account string) ([]*limit.Charge, error) {
	addr := ss.ClientAddr(r)
	charges := make([]*limit.Charge, 0, 3)
	refuse := func(err error) ([]*limit.Charge, error) {
		for _, c := range charges {
			c.Refund()
		}
		var refused *limit.Refused
		if errors.As(err, &refused) {
			return nil, &ErrThrottled{Retry: refused.Retry}
		}
		return nil, err
	}
	for _, step := range []struct {
		t   throttle
		key string
	}{{ss.byAddr, addr}, {ss.byPair, addr + " " + account}} {
		c, err := step.t.Charge(ctx, step.key)
		if err != nil {
			return refuse(err)
		}
		charges = append(charges, c)
	}
	if ss.knownDevice(r, account) {
		return charges, nil
	}
	deadline := ss.now().Add(accountDelay)
	for tries := 1; ; tries++ {
		c, err := ss.byAccount.Charge(ctx, account)
		if err == nil {
			return append(charges, c), nil
		}
		var refused *limit.Refused
		if !errors.As(err, &refused) || ss.now().Add(refused.Retry).After(deadline) || tries == accountTries {
			return refuse(err)
		}
		if err := ss.sleep(ctx, refused.Retry); err != nil {
			return refuse(&limit.Refused{Retry: refused.Retry})
		}
	}
}

// setDevice gives the browser the account's device cookie: signed by the
// service, naming the account and its expiry, sent only to the sign-in form.
func (ss *Sessions) setDevice(w http.ResponseWriter, r *http.Request, account string) {
	exp := ss.now().Add(deviceCookieAge).Truncate(time.Second)
	v := strconv.FormatInt(exp.Unix(), 10) + "." + ss.Tenants.key.Sign("signin-device", account, exp)
	http.SetCookie(w, &http.Cookie{Name: DeviceCookie, Value: v, Path: "/signin", MaxAge: int(deviceCookieAge / time.Second),
		HttpOnly: true, Secure: ss.Secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// knownDevice reports whether the request carries a valid device cookie of
// account.
func (ss *Sessions) knownDevice(r *http.Request, account string) bool {
	c, err := r.Cookie(DeviceCookie)
	if err != nil || len(c.Value) > 128 {
		return false
	}
	exp, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return false
	}
	return ss.Tenants.key.Verify("signin-device", account, time.Unix(unix, 0), sig, ss.now())
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

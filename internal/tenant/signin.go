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

	"github.com/catchbox/catchbox/internal/store"
)

// Sign-in links: a one-time link that signs a browser in as a user with no
// password to type. A local-mode start prints one for the default
// organisation's owner; catchbox admin signin-link prints one for any user, in
// any mode. The link carries a random token of 256 bits; the store keeps only
// its SHA-256, so a copy of the database signs nobody in. A link works once,
// within SignInLinkTTL of its making, and then never again.

// SignInLinkTTL is how long a sign-in link works: long enough to open it from
// the terminal it was printed in, short enough that one found later in a
// scrollback or a log is dead.
const SignInLinkTTL = 15 * time.Minute

// OwnerEmail is the address of the default organisation's owner, the user a
// first start makes (a member of the default organisation, with no password:
// they sign in with a link). An administrator may give them a password with
// catchbox admin user password.
const OwnerEmail = "owner@localhost"

// ErrLinkInvalid is a sign-in link that is unknown, already used, or expired;
// the three are not told apart.
var ErrLinkInvalid = errors.New("the sign-in link has expired or was already used")

// EnsureOwner returns the default organisation's owner, making them first when
// they do not exist (a store made before owners were) and making them a member
// of the default organisation again when they are not. It fails with
// ErrNotFound when there is no default organisation.
func (s *Service) EnsureOwner(ctx context.Context) (User, error) {
	o, err := s.OrgByName(ctx, DefaultName)
	if err != nil {
		return User{}, fmt.Errorf("organisation %s: %w", DefaultName, err)
	}
	u, err := s.UserByEmail(ctx, OwnerEmail)
	if errors.Is(err, ErrNotFound) {
		u, err = s.createOwner(ctx, o.ID)
		if errors.Is(err, ErrNameTaken) { // another replica made them first
			u, err = s.UserByEmail(ctx, OwnerEmail)
		}
	}
	if err != nil {
		return User{}, err
	}
	return u, s.AddMember(ctx, u.ID, o.ID)
}

// createOwner makes the owner, with no password, a member of orgID.
func (s *Service) createOwner(ctx context.Context, orgID string) (User, error) {
	now := store.NowMillis()
	u := User{ID: NewID(), Email: OwnerEmail, CreatedAt: time.UnixMilli(now)}
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		// An empty hash matches no password (CheckPassword).
		if _, err := tx.Exec(ctx, "INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?, ?, '', ?, ?)",
			u.ID, u.Email, now, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO memberships (user_id, org_id, created_at) VALUES (?, ?, ?)", u.ID, orgID, now)
		return err
	})
	if store.IsUniqueViolation(err) {
		return User{}, fmt.Errorf("user %s: %w", OwnerEmail, ErrNameTaken)
	}
	if err != nil {
		return User{}, fmt.Errorf("create the owner: %w", err)
	}
	return u, nil
}

// CreateSignInLink makes a sign-in link's token for the user, valid until the
// returned time. The token is shown once, in the link; only its hash is kept.
func (s *Service) CreateSignInLink(ctx context.Context, userID string, now time.Time) (token string, expires time.Time, err error) {
	var b [32]byte
	rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	expires = now.Add(SignInLinkTTL)
	if _, err := s.db.Exec(ctx, "INSERT INTO signin_links (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
		hashKey(token), userID, now.UnixMilli(), expires.UnixMilli()); err != nil {
		return "", time.Time{}, fmt.Errorf("create a sign-in link: %w", err)
	}
	return token, expires.Truncate(time.Millisecond), nil
}

// useSignInLink deletes the link's row and returns its user when it was
// valid at now. Of two requests with one token only the one whose delete
// removed the row succeeds.
func (s *Service) useSignInLink(ctx context.Context, token string, now time.Time) (User, error) {
	if token == "" || len(token) > 128 {
		return User{}, ErrLinkInvalid
	}
	h := hashKey(token)
	var userID string
	var expires int64
	err := s.db.QueryRow(ctx, "SELECT user_id, expires_at FROM signin_links WHERE token_hash = ?", h).Scan(&userID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrLinkInvalid
	}
	if err != nil {
		return User{}, fmt.Errorf("find a sign-in link: %w", err)
	}
	res, err := s.db.Exec(ctx, "DELETE FROM signin_links WHERE token_hash = ?", h)
	if err != nil {
		return User{}, fmt.Errorf("use a sign-in link: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 || now.UnixMilli() >= expires {
		return User{}, ErrLinkInvalid
	}
	var u User
	var created int64
	err = s.db.QueryRow(ctx, "SELECT id, email, created_at FROM users WHERE id = ?", userID).Scan(&u.ID, &u.Email, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrLinkInvalid
	}
	if err != nil {
		return User{}, fmt.Errorf("find a sign-in link's user: %w", err)
	}
	u.CreatedAt = time.UnixMilli(created)
	return u, nil
}

// SignInWithLink uses a sign-in link's token: when it is valid, it is used up
// and a new session starts for its user, as SignIn starts one (the request's
// old session ended first); else ErrLinkInvalid.
func (ss *Sessions) SignInWithLink(w http.ResponseWriter, r *http.Request, token string) (User, error) {
	ctx := r.Context()
	u, err := ss.Tenants.useSignInLink(ctx, token, ss.now())
	if err != nil {
		return User{}, err
	}
	ss.end(ctx, r)
	session, err := ss.create(ctx, u.ID)
	if err != nil {
		return User{}, err
	}
	ss.setCookie(w, r, session, int(ss.MaxAge/time.Second))
	return u, nil
}

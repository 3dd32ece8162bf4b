package tenant

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/catchbox/catchbox/internal/store"
)

// User is a person who signs in to the dashboard. They act for the
// organisations they are a member of.
type User struct {
	ID        string
	Email     string
	CreatedAt time.Time
}

// Password limits: long enough to resist guessing, short enough that hashing
// a hostile one costs nothing unusual.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024
)

// Errors of the user store.
var (
	ErrUserEmail     = errors.New("a user's email must be an address like name@example.com, at most 254 characters")
	ErrPasswordShort = fmt.Errorf("a password must be %d to %d characters", MinPasswordLen, MaxPasswordLen)
	ErrBadPassword   = errors.New("wrong email or password")
)

// argon2id parameters: RFC 9106 section 4's second recommended option scaled
// to a small server (19 MiB, 2 passes), the minimum OWASP's password storage
// guidance gives for argon2id.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonKeyLen  = 32
)

// HashPassword returns the argon2id hash of password in the PHC string form.
// It holds 19 MiB while it runs; the service hashes through hashPassword,
// which bounds how many run at once.
func HashPassword(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	sum := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(sum))
}

// CheckPassword reports whether password matches a hash of HashPassword, in
// time that does not depend on where they differ.
func CheckPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 16 || p == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// hashPassword is HashPassword through the process's hash gate (ErrBusy when
// it is full).
func hashPassword(ctx context.Context, password string) (hash string, err error) {
	err = hashes.do(ctx, func() { hash = HashPassword(password) })
	return hash, err
}

// checkPassword is CheckPassword through the process's hash gate.
func checkPassword(ctx context.Context, hash, password string) (ok bool, err error) {
	err = hashes.do(ctx, func() { ok = CheckPassword(hash, password) })
	return ok, err
}

// dummyHash is checked against when no user has the address, so a sign-in
// takes as long for an unknown address as for a wrong password. It has the
// parameters of HashPassword; what it hashes does not matter (written out,
// rather than made at start, so that no process pays a hash it never needs).
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$Y2F0Y2hib3gtbm91c2VyIQ$5YTbKAmrLK5MUM5Nk24aaUEOdN46wQUFfkjgMNUDXtg"

// NormalizeEmail lower-cases and checks a user's address.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 || !strings.Contains(e, "@") {
		return "", ErrUserEmail
	}
	return e, nil
}

func checkPasswordLen(password string) error {
	if n := len([]rune(password)); n < MinPasswordLen || len(password) > MaxPasswordLen {
		return ErrPasswordShort
	}
	return nil
}

// CreateUser creates a user with the password and makes them a member of the
// organisation. An address that is taken is ErrNameTaken.
func (s *Service) CreateUser(ctx context.Context, email, password, orgID string) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, err
	}
	if err := checkPasswordLen(password); err != nil {
		return User{}, err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return User{}, err
	}
	now := store.NowMillis()
	u := User{ID: NewID(), Email: email, CreatedAt: time.UnixMilli(now)}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
			u.ID, email, hash, now, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO memberships (user_id, org_id, created_at) VALUES (?, ?, ?)", u.ID, orgID, now)
		return err
	})
	if store.IsUniqueViolation(err) {
		return User{}, fmt.Errorf("user %s: %w", email, ErrNameTaken)
	}
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// AddMember makes an existing user a member of the organisation too; being one
// already is no error.
func (s *Service) AddMember(ctx context.Context, userID, orgID string) error {
	_, err := s.db.Exec(ctx, "INSERT INTO memberships (user_id, org_id, created_at) VALUES (?, ?, ?)", userID, orgID, store.NowMillis())
	if store.IsUniqueViolation(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("add member: %w", err)
	}
	return nil
}

// RemoveMember ends the user's membership of the organisation; their sessions
// stop acting for it at their next request.
func (s *Service) RemoveMember(ctx context.Context, userID, orgID string) error {
	res, err := s.db.Exec(ctx, "DELETE FROM memberships WHERE user_id = ? AND org_id = ?", userID, orgID)
	if err != nil {
		return fmt.Errorf("remove member: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("membership: %w", ErrNotFound)
	}
	return nil
}

// UserByEmail finds a user by address.
func (s *Service) UserByEmail(ctx context.Context, email string) (User, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return User{}, ErrNotFound
	}
	u, _, err := s.userWithHash(ctx, email)
	return u, err
}

func (s *Service) userWithHash(ctx context.Context, email string) (User, string, error) {
	var u User
	var hash string
	var created int64
	err := s.db.QueryRow(ctx, "SELECT id, email, password_hash, created_at FROM users WHERE email = ?", email).
		Scan(&u.ID, &u.Email, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, "", fmt.Errorf("user %s: %w", email, ErrNotFound)
	}
	if err != nil {
		return User{}, "", fmt.Errorf("find user: %w", err)
	}
	u.CreatedAt = time.UnixMilli(created)
	return u, hash, nil
}

// CheckUser returns the user whose address and password these are, else
// ErrBadPassword (never telling which of the two was wrong). The hash waits
// for the process's hash gate: ErrBusy when it is full, and then the password
// was not checked.
func (s *Service) CheckUser(ctx context.Context, email, password string) (User, error) {
	var u User
	hash := dummyHash
	email, err := NormalizeEmail(email)
	if err == nil && len(password) <= MaxPasswordLen {
		var found string
		u, found, err = s.userWithHash(ctx, email)
		switch {
		case err == nil:
			hash = found
		case !errors.Is(err, ErrNotFound):
			return User{}, err
		}
	}
	ok, herr := checkPassword(ctx, hash, password)
	if herr != nil {
		return User{}, herr
	}
	if !ok || hash == dummyHash {
		return User{}, ErrBadPassword
	}
	return u, nil
}

// SetPassword changes the user's password and ends every session they have;
// their unused sign-in links stop working too.
func (s *Service) SetPassword(ctx context.Context, userID, password string) error {
	if err := checkPasswordLen(password); err != nil {
		return err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, "UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?", hash, store.NowMillis(), userID)
		if err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		for _, q := range []string{"DELETE FROM sessions WHERE user_id = ?", "DELETE FROM signin_links WHERE user_id = ?"} {
			if _, err := tx.Exec(ctx, q, userID); err != nil {
				return err
			}
		}
		return nil
	})
}

// RemoveUser deletes the user, their memberships and their sessions: a browser
// still holding a session cookie is signed out at its next request.
func (s *Service) RemoveUser(ctx context.Context, userID string) error {
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		for _, q := range []string{"DELETE FROM sessions WHERE user_id = ?", "DELETE FROM signin_links WHERE user_id = ?",
			"DELETE FROM memberships WHERE user_id = ?"} {
			if _, err := tx.Exec(ctx, q, userID); err != nil {
				return fmt.Errorf("remove user: %w", err)
			}
		}
		res, err := tx.Exec(ctx, "DELETE FROM users WHERE id = ?", userID)
		if err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// Member is a user as a member of one organisation.
type Member struct {
	User
	Since time.Time
}

// Members lists the organisation's users, by address.
func (s *Service) Members(ctx context.Context, orgID string) ([]Member, error) {
	rows, err := s.db.Query(ctx, `SELECT u.id, u.email, u.created_at, m.created_at FROM memberships m
		JOIN users u ON u.id = m.user_id WHERE m.org_id = ? ORDER BY u.email`, orgID)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	defer rows.Close()
	var out []Member
	for rows.Next() {
		var m Member
		var created, since int64
		if err := rows.Scan(&m.ID, &m.Email, &created, &since); err != nil {
			return nil, err
		}
		m.CreatedAt, m.Since = time.UnixMilli(created), time.UnixMilli(since)
		out = append(out, m)
	}
	return out, rows.Err()
}

// UserOrgs lists the organisations the user belongs to, by name.
func (s *Service) UserOrgs(ctx context.Context, userID string) ([]Org, error) {
	rows, err := s.db.Query(ctx, `SELECT o.id, o.name, o.totp_device_limit, o.totp_enabled, o.created_at, o.updated_at
		FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? ORDER BY o.name`, userID)
	if err != nil {
		return nil, fmt.Errorf("list organisations of user: %w", err)
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

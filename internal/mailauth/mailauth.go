// Package mailauth checks the credentials of the mail listeners: SMTP AUTH
// (internal/smtpd), IMAP (internal/imapd) and POP3 (internal/pop3d) all take a
// namespace's name as the user name and the namespace's SMTP password
// (tenant.Service.SMTPPassword), as contract section 5 says.
//
// One Checker is shared by the three listeners, so that the attempts of a
// client address are counted once whichever door they knock on: a guesser
// cannot get ten tries at SMTP, ten at IMAP and ten at POP3. The PLAIN and
// LOGIN SASL exchanges (sasl.go) are shared the same way.
package mailauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Errors of Check. Each listener turns them into its own reply.
var (
	// ErrFailed: the user name or the password is wrong (or names no
	// namespace: the two are not told apart).
	ErrFailed = errors.New("authentication failed")
	// ErrThrottled: the client address has used up its attempts.
	ErrThrottled = errors.New("too many failed authentications from the address")
	// ErrTemporary: the store could not be asked; the client may try again.
	ErrTemporary = errors.New("temporary authentication failure")
)

const (
	// lookupTimeout bounds the namespace lookup of one attempt.
	lookupTimeout = 30 * time.Second
	// wait is how long an attempt waits for the outcome of attempts from its
	// address still being evaluated when they hold every token.
	wait = 5 * time.Second
)

// Checker checks namespace credentials and throttles attempts per client
// address (limit.AddrKey): Failures failed attempts, then one more per
// Lockout. Every attempt is charged before its credentials are looked at and
// given back when they are right, so attempts made at once never evaluate
// more than Failures; one whose credentials arrive while the address's
// attempts are all being evaluated waits for their outcome, so a sender
// opening many connections at once is not refused for their overlap. The
// count is the process's: each replica has its own. It is safe for
// concurrent use.
type Checker struct {
	tenants *tenant.Service
	failed  *limit.Buckets
	// refusals logs failed and throttled attempts at most once per interval
	// per client address, with a count.
	refusals limit.Quiet

	// Arrived and Evaluating, when a test sets them before use, are called
	// as an attempt's credentials arrive, and once it is charged, just
	// before they are evaluated.
	Arrived, Evaluating func()
}

// New returns a checker that finds namespaces through tenants and allows each
// client address failures failed attempts, regaining one per lockout.
func New(tenants *tenant.Service, failures int, lockout time.Duration) *Checker {
	if failures < 1 {
		failures = 1
	}
	if lockout <= 0 {
		lockout = time.Minute
	}
	c := &Checker{tenants: tenants, failed: limit.New(1/lockout.Seconds(), failures)}
	c.failed.Wait = wait
	return c
}

// SetClock replaces the clock of the throttle (tests).
func (c *Checker) SetClock(now func() time.Time) { c.failed.Now = now }

// SetWait replaces how long an attempt waits for the outcome of attempts
// from its address still being evaluated (tests).
func (c *Checker) SetWait(d time.Duration) { c.failed.Wait = d }

// Client is who is attempting: the protocol ("smtp", "imap", "pop3": the
// kind of catchbox_auth_attempts_total) and the client's address, for the
// throttle and the log.
type Client struct {
	Protocol string
	IP       string // the address as logged
	AddrKey  string // limit.AddrKey of the address: the throttle's key
}

// Throttled reports whether the client address has used up its attempts, and
// logs and counts the refusal when it has. A listener asks before it starts an
// exchange, so a throttled client is refused before it sends a password.
func (c *Checker) Throttled(cl Client) bool {
	if _, ok := c.failed.Ready(cl.AddrKey); ok {
		return false
	}
	c.throttled(cl)
	return true
}

// Check accepts a namespace name as username with the namespace's SMTP
// password and returns the namespace. identity is a SASL authorisation
// identity ("" when absent); one other than the username is refused. The
// attempt is charged to the client's address first; ErrThrottled is returned,
// without looking at the credentials, when the address has none left.
func (c *Checker) Check(ctx context.Context, cl Client, identity, username, password string) (tenant.Namespace, error) {
	if c.Arrived != nil {
		c.Arrived()
	}
	charge, err := c.failed.Charge(ctx, cl.AddrKey)
	if err != nil {
		c.throttled(cl)
		return tenant.Namespace{}, ErrThrottled
	}
	defer charge.Settle()
	if c.Evaluating != nil {
		c.Evaluating()
	}
	if identity != "" && !strings.EqualFold(identity, username) {
		return tenant.Namespace{}, c.failure(cl, "")
	}
	name, err := tenant.NormalizeNamespaceName(username)
	if err != nil {
		return tenant.Namespace{}, c.failure(cl, "")
	}
	lookup, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ns, err := c.tenants.NamespaceByName(lookup, name)
	if errors.Is(err, tenant.ErrNotFound) {
		return tenant.Namespace{}, c.failure(cl, "")
	}
	if err != nil {
		charge.Refund() // not evaluated
		slog.Error("Looking up the namespace of a login failed", "protocol", cl.Protocol, "client_ip", cl.IP, "err", err)
		return tenant.Namespace{}, fmt.Errorf("%w: %w", ErrTemporary, err)
	}
	want := c.tenants.SMTPPassword(ns)
	if subtle.ConstantTimeCompare([]byte(password), []byte(want)) != 1 {
		return tenant.Namespace{}, c.failure(cl, ns.Name)
	}
	charge.Refund()
	metrics.Auth(cl.Protocol, "ok")
	slog.Debug("Client authenticated", "protocol", cl.Protocol, "client_ip", cl.IP, "namespace", ns.Name)
	return ns, nil
}

// throttled logs and counts a refusal of an address that has used up its
// attempts.
func (c *Checker) throttled(cl Client) {
	metrics.Auth(cl.Protocol, "throttled")
	c.refusals.Log(slog.LevelInfo, "Login refused: too many failed attempts from the address", cl.Protocol+"_auth_throttled", cl.AddrKey,
		slog.String("protocol", cl.Protocol), slog.String("client_ip", cl.IP))
}

// failure logs and counts a refused attempt, whose charge stays spent, and
// returns ErrFailed. The namespace is named only when it exists: a client that
// swapped its fields would otherwise have its password written to the log.
func (c *Checker) failure(cl Client, namespace string) error {
	metrics.Auth(cl.Protocol, "failed")
	attrs := []slog.Attr{slog.String("protocol", cl.Protocol), slog.String("client_ip", cl.IP)}
	if namespace != "" {
		attrs = append(attrs, slog.String("namespace", namespace))
	}
	c.refusals.Log(slog.LevelInfo, "Authentication failed", cl.Protocol+"_auth_failed", cl.AddrKey, attrs...)
	return ErrFailed
}

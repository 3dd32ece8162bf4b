// Package smtpd is Catchbox's SMTP listener: the one door through which mail
// enters an inbox.
//
// One port serves two roles (contract section 5). As an MX it takes mail for any
// recipient <local>@<namespace>.<mail domain> whose namespace exists; as a
// virtual SMTP server it takes mail from a client that authenticated with a
// namespace's credentials (AUTH PLAIN or LOGIN), for that namespace only. Either
// way a message is answered 250 only after inbox.Ingester.Deliver has committed
// it, so a 250 survives a crash.
//
// Every connection is bounded: message size, recipients per message, line
// length, commands per connection, connections at once (in all and from one
// client address), failed AUTH attempts per address, and an idle timeout.
// Replies name what is wrong in generic words and never carry an internal error.
// docs/smtp.md lists every reply the listener sends and why.
package smtpd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Config is the listener's configuration. Zero limits take the defaults below,
// which match the defaults of catchbox serve.
type Config struct {
	// Addrs are the addresses the server wiring listens on; the listener itself
	// serves whatever net.Listener it is given and only reports them in logs.
	Addrs []string
	// Domain is the mail domain: mail to x@<namespace>.<Domain> is received.
	Domain string
	// Hostname is the name announced in the 220 greeting.
	Hostname string

	MaxMessageBytes int64         // largest message (SIZE, RFC 1870); larger is 552 5.3.4
	MaxRecipients   int           // distinct RCPT TO per message; more is 452 4.5.3
	MaxConnections  int           // connections open at once; more are answered 421 4.7.0 and closed
	IdleTimeout     time.Duration // a client silent this long is answered 421 4.4.2 and closed
	MaxCommands     int           // command lines per connection; more is 421 4.7.0 and close
	// MaxConnsPerIP bounds the connections open at once from one client
	// address (IPv6: one /64), so that one client cannot take every slot of
	// MaxConnections; more are answered 421 4.7.0 and closed.
	MaxConnsPerIP int
	// AuthFailures is how many failed AUTH attempts (535) one client address
	// may make; once they are used up, AUTH from that address is answered
	// 421 4.7.0 and the connection closed, and the address regains one
	// attempt per AuthLockout. Every attempt is charged before its
	// credentials are looked at and given back when they are right, so
	// attempts made at once never evaluate more than AuthFailures. The count
	// is the process's: each replica has its own.
	AuthFailures int
	AuthLockout  time.Duration
	// Auth checks AUTH's credentials and throttles attempts (mailauth); the
	// server wiring shares one with the IMAP and POP3 listeners, so an
	// address's attempts count once across the three. Nil: New makes one
	// from AuthFailures and AuthLockout.
	Auth *mailauth.Checker

	// TLSConfig enables STARTTLS (RFC 3207); nil offers no STARTTLS.
	TLSConfig *tls.Config
	// RequireTLS refuses AUTH before STARTTLS (530 5.7.0), so credentials never
	// cross the network in clear text.
	RequireTLS bool

	// Returns receives mail sent back to the return paths of outbound mail;
	// nil refuses return paths like any address of the bare mail domain.
	Returns Returns

	// CatchAll is the namespace that receives mail whose recipient names no
	// existing namespace (another domain, the bare mail domain, an unknown
	// namespace), the original address kept as a recipient; "" refuses such
	// a recipient with 550 5.1.1 and a text naming the accepted form. It
	// applies to unauthenticated clients: after AUTH a client may only send
	// to its own namespace. Return paths of outbound mail are never caught.
	CatchAll string

	// Faults applies the namespaces' fault rules (internal/chaos); nil
	// applies none. Mail to a namespace without rules costs a map lookup.
	Faults Faults
}

// Returns receives what is sent to the return paths of outbound mail
// (bounce+<id>.<tag>@<mail domain>): delivery status notifications and
// feedback reports (outbound.Returns). Such a message is not an inbox email.
type Returns interface {
	// ReturnPath reports the outbound email a return path was made for, and
	// false for any other address (a forged tag among them).
	ReturnPath(addr string) (outboundID string, ok bool)
	// Receive handles a message sent to the return paths of the emails ids
	// and returns once what it recorded is committed; an error is a
	// temporary failure for the sender to retry.
	Receive(ctx context.Context, raw []byte, mailFrom string, ids []string) error
}

// Defaults for zero Config fields.
const (
	DefaultHostname        = "catchbox"
	DefaultDomain          = "localhost"
	DefaultMaxMessageBytes = 30 << 20
	DefaultMaxRecipients   = 100
	DefaultMaxConnections  = 500
	DefaultIdleTimeout     = 60 * time.Second
	DefaultMaxCommands     = 1000
	DefaultMaxConnsPerIP   = 100
	DefaultAuthFailures    = 10
	DefaultAuthLockout     = time.Minute
)

const (
	// maxLineLength bounds a command or text line. RFC 5321 section 4.5.3.1.6
	// sets 1000 octets; twice that, as go-smtp does, tolerates sloppy senders
	// without letting one line grow without end.
	maxLineLength = 2000
	// storeTimeout bounds a namespace lookup at RCPT or AUTH.
	storeTimeout = 30 * time.Second
	// deliverTimeout bounds the wait to hand a message to the ingester; once
	// queued, Deliver waits for the commit whatever the context says.
	deliverTimeout = 2 * time.Minute
	// refuseWriteTimeout bounds writing a farewell reply before a close.
	refuseWriteTimeout = 5 * time.Second
	// lingerTimeout and lingerBytes bound the draining of a refused client's
	// input before the close.
	lingerTimeout = time.Second
	lingerBytes   = 64 << 10
)

// Server is the SMTP listener. It serves any number of net.Listeners, all sharing
// one connection limit.
type Server struct {
	cfg      Config
	routes   *routing.Rule // which namespace a recipient is addressed to
	tenants  *tenant.Service
	ingester *inbox.Ingester
	smtp     *smtp.Server

	// ctx bounds store calls made for clients; it is cancelled when Shutdown
	// gives up waiting, or after it completes.
	ctx    context.Context
	cancel context.CancelFunc

	closing      atomic.Bool
	shutdownOnce sync.Once
	stopped      chan struct{} // closed when go-smtp's Shutdown returned
	stopErr      error

	mu        sync.Mutex
	listeners []net.Listener // every listener Serve was given, closed by Shutdown
	conns     map[*conn]struct{}
	open      *limit.Conns // connections held, in all and by client address key
	auth      *mailauth.Checker

	lastLimitLog atomic.Int64 // unix ms of the last "connection limit reached" log

	// noSuchMailbox is the 550 5.1.1 for a recipient no namespace takes; its
	// text names the form of the addresses that are taken.
	noSuchMailbox *smtp.SMTPError
	// catchAllMissing is set while the catch-all namespace is found missing,
	// so that it is logged once, not at every recipient.
	catchAllMissing atomic.Bool
}

// New returns a listener that stores mail through ingester and finds namespaces
// and their SMTP passwords through tenants. Call Serve for each listener.
func New(cfg Config, tenants *tenant.Service, ingester *inbox.Ingester) *Server {
	if cfg.Hostname == "" {
		cfg.Hostname = DefaultHostname
	}
	domain := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(cfg.Domain), "."))
	if domain == "" {
		domain = DefaultDomain
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxRecipients <= 0 {
		cfg.MaxRecipients = DefaultMaxRecipients
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxCommands <= 0 {
		cfg.MaxCommands = DefaultMaxCommands
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if cfg.AuthFailures <= 0 {
		cfg.AuthFailures = DefaultAuthFailures
	}
	if cfg.AuthLockout <= 0 {
		cfg.AuthLockout = DefaultAuthLockout
	}
	if cfg.RequireTLS && cfg.TLSConfig == nil {
		slog.Warn("SMTP AUTH is unavailable: TLS is required for it but no certificate is configured")
	}

	s := &Server{
		cfg:      cfg,
		routes:   routing.New(domain, tenants),
		tenants:  tenants,
		ingester: ingester,
		stopped:  make(chan struct{}),
		conns:    map[*conn]struct{}{},
		open:     limit.NewConns(cfg.MaxConnections, cfg.MaxConnsPerIP),
		auth:     cfg.Auth,

		noSuchMailbox: replyNoSuchMailbox(domain),
	}
	if s.auth == nil {
		s.auth = mailauth.New(tenants, cfg.AuthFailures, cfg.AuthLockout)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = cfg.Hostname
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	// Recipients are counted by the session, once per distinct address.
	srv.MaxRecipients = 0
	srv.MaxLineLength = maxLineLength
	srv.ReadTimeout = cfg.IdleTimeout
	srv.WriteTimeout = cfg.IdleTimeout
	// AUTH is always accepted by go-smtp; the session refuses it before
	// STARTTLS when RequireTLS is set, with the reply the contract names.
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = errorLog{}
	if cfg.TLSConfig != nil {
		srv.TLSConfig = markTLS(cfg.TLSConfig)
	}
	s.smtp = srv
	return s
}

// Serve accepts connections on l until Shutdown, then returns nil. It may be
// called for several listeners at once; called after Shutdown, it closes l and
// returns smtp.ErrServerClosed.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		l.Close()
		return smtp.ErrServerClosed
	}
	// Shutdown closes l even when it comes before go-smtp has l in its list
	// (go-smtp closes only the listeners it has), so that Serve never waits
	// in Accept after a shutdown.
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	slog.Info("SMTP listener started", "addr", l.Addr().String(), "domain", s.routes.Domain(),
		"catch_all", s.cfg.CatchAll, "starttls", s.cfg.TLSConfig != nil, "require_tls", s.cfg.RequireTLS)
	err := s.smtp.Serve(&listener{Listener: l, srv: s})
	if err != nil && s.closing.Load() {
		return nil
	}
	if err != nil {
		return fmt.Errorf("smtp serve %s: %w", l.Addr(), err)
	}
	return nil
}

// Shutdown stops accepting connections and closes the open ones as they become
// idle: a client between commands is answered 421 and closed at once, a message
// being received is finished and answered first. When ctx ends before every
// connection is closed, the rest are closed abruptly and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	for _, l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	s.shutdownOnce.Do(func() {
		go func() {
			defer close(s.stopped)
			defer func() {
				if p := recover(); p != nil {
					slog.Error("Panic while stopping the SMTP listener", "panic", p, "stack", string(debug.Stack()))
				}
			}()
			// go-smtp closes the listeners and waits for every connection
			// goroutine; the connections are closed below.
			s.stopErr = s.smtp.Shutdown(context.Background())
		}()
	})
	for _, c := range s.snapshot() {
		c.interruptIdle()
	}
	select {
	case <-s.stopped:
		s.cancel()
		if s.stopErr != nil && !errors.Is(s.stopErr, smtp.ErrServerClosed) && !errors.Is(s.stopErr, net.ErrClosed) {
			return fmt.Errorf("smtp shutdown: %w", s.stopErr)
		}
		return nil
	case <-ctx.Done():
		for _, c := range s.snapshot() {
			c.Close()
		}
		s.cancel()
		return ctx.Err()
	}
}

func (s *Server) snapshot() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// track registers a new connection, or returns the reply that refuses it when
// the connection limit, or the limit of its client address, is reached.
func (s *Server) track(nc net.Conn) (*conn, string) {
	key := addrKey(nc.RemoteAddr())
	switch s.open.Acquire(key) {
	case limit.TooMany:
		return nil, replyTooManyConnections
	case limit.TooManyKey:
		return nil, replyTooManyFromAddress
	}
	c := &conn{Conn: nc, srv: s, addrKey: key}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c, ""
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.open.Release(c.addrKey)
}

// refuseBusy answers a connection over a limit with 421 and closes it
// (RFC 5321 section 3.8). A fresh socket's send buffer is empty, so the write
// does not block the accept loop; the deadline is a guard all the same.
func (s *Server) refuseBusy(nc net.Conn, reply string) {
	now := time.Now()
	if last := s.lastLimitLog.Load(); now.UnixMilli()-last > time.Minute.Milliseconds() &&
		s.lastLimitLog.CompareAndSwap(last, now.UnixMilli()) {
		if reply == replyTooManyFromAddress {
			slog.Warn("SMTP connection limit of one client address reached, refusing its connections",
				"client_ip", remoteIP(nc), "max_connections_per_ip", s.cfg.MaxConnsPerIP)
		} else {
			slog.Warn("SMTP connection limit reached, refusing connections", "max_connections", s.cfg.MaxConnections)
		}
	}
	nc.SetWriteDeadline(now.Add(time.Second))
	io.WriteString(nc, reply)
	nc.Close()
}

// listener applies the connection limit before go-smtp sees a connection.
type listener struct {
	net.Listener
	srv *Server
}

// Accept returns the next connection under the limit; connections over it are
// refused here and never reach go-smtp.
func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.srv.closing.Load() {
			// Accepted while shutting down, on a listener go-smtp did not yet
			// know about: stop here.
			nc.Close()
			l.Listener.Close()
			return nil, net.ErrClosed
		}
		c, refusal := l.srv.track(nc)
		if refusal == "" {
			metrics.SMTPSession("accepted")
			return c, nil
		}
		metrics.SMTPSession("busy")
		l.srv.refuseBusy(nc, refusal)
	}
}

// errRefused ends go-smtp's command loop without a further reply: go-smtp treats
// net.ErrClosed as a normal end of the connection.
var errRefused = fmt.Errorf("smtpd: connection refused further commands: %w", net.ErrClosed)

// conn is one client connection. It counts commands and closes the connection
// at the command limit or during shutdown, between two commands.
type conn struct {
	net.Conn
	srv     *Server
	addrKey string // the client address's key (addrKey)

	// Touched only by the connection's goroutine.
	commands  int
	smtpConn  *smtp.Conn // set when the first session starts (EHLO/HELO)
	closeNext bool       // the last reply was final: close before the next command

	tlsStarted atomic.Bool // a STARTTLS handshake began on this connection

	// The data stage's fault rules (beforeData), touched only by the
	// connection's goroutine: sess is the current session; injectEnd makes
	// the next Read an empty message's end, for go-smtp's reader of message
	// data after a rule's reply replaced the 354; dropReply swallows the
	// reply go-smtp then writes. Both are cleared before the next command.
	sess      *session
	injectEnd bool
	dropReply bool

	// inData is set while a message is being received: shutdown lets it
	// finish, and reads move the idle deadline. Set under mu, so that
	// interruptIdle's look and deadline are one step.
	mu     sync.Mutex
	inData atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// SetReadDeadline is go-smtp's read of a command line: go-smtp calls it once
// before reading each command line (and each AUTH continuation), and never
// while reading message data. That makes it the point between two commands,
// where the command limit and shutdown are applied. The read deadline itself is
// the idle timeout. TestCommandLimit fails if a go-smtp upgrade changes this.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.commands++
	c.injectEnd, c.dropReply = false, false
	switch {
	case c.closeNext:
		c.lingerClose()
		return errRefused
	case c.srv.closing.Load():
		c.refuse(replyShuttingDown)
		return errRefused
	case c.commands > c.srv.cfg.MaxCommands:
		slog.Info("SMTP client sent too many commands, closing", "client_ip", remoteIP(c.Conn), "max_commands", c.srv.cfg.MaxCommands)
		c.refuse(replyTooManyCommands)
		return errRefused
	}
	return c.Conn.SetReadDeadline(t)
}

// Write is go-smtp's write of a reply in plain text (not after STARTTLS,
// whose replies go through the TLS connection above this one). go-smtp
// flushes each reply line on its own, so one Write is one line: the 354 that
// answers DATA is where the data stage's fault rules act (beforeData).
func (c *conn) Write(p []byte) (int, error) {
	if c.dropReply {
		c.dropReply = false
		return len(p), nil
	}
	if c.sess != nil && len(p) >= 4 && string(p[:4]) == "354 " && !c.tlsStarted.Load() && c.sess.beforeData(c) {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// refuse writes a final reply and closes the connection. The reply goes through
// the connection go-smtp currently speaks on (TLS after STARTTLS).
func (c *conn) refuse(reply string) {
	var w net.Conn = c.Conn
	switch {
	case c.smtpConn != nil:
		w = c.smtpConn.Conn()
	case c.tlsStarted.Load():
		w = nil // TLS began before any session: no way to reply in it
	}
	if w != nil {
		w.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		io.WriteString(w, reply)
	}
	c.lingerClose()
}

// lingerClose closes the connection so the client reads the last reply: a
// socket closed with unread input answers with a reset, which can overtake
// that reply. Sending side first, then what the client still sends is read and
// dropped for a short, bounded while.
func (c *conn) lingerClose() {
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		tcp.CloseWrite()
		c.Conn.SetReadDeadline(time.Now().Add(lingerTimeout))
		io.Copy(io.Discard, io.LimitReader(c.Conn, lingerBytes))
	}
	c.Close()
}

// Read reads from the client. While a message is being received, each read
// first moves the idle deadline, so the idle timeout measures silence rather
// than the length of a transfer; between commands the deadline is go-smtp's
// (SetReadDeadline). Every read of the connection comes here, through TLS
// after STARTTLS too. After a data-stage fault rule replaced the 354
// (beforeData) it reads the end of an empty message once, so that go-smtp's
// reader of message data ends without waiting for a message the client will
// not send.
func (c *conn) Read(p []byte) (int, error) {
	if c.injectEnd {
		c.injectEnd = false
		return copy(p, ".\r\n"), nil
	}
	if c.inData.Load() {
		c.Conn.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	}
	return c.Conn.Read(p)
}

func (c *conn) beginData() {
	c.mu.Lock()
	c.inData.Store(true)
	c.mu.Unlock()
}

func (c *conn) endData() {
	c.mu.Lock()
	c.inData.Store(false)
	c.mu.Unlock()
}

// interruptIdle wakes a connection waiting for its client's next command, so
// that it ends now (go-smtp answers 421 4.4.2). A connection receiving a
// message is left to finish it; it is closed before its next command.
func (c *conn) interruptIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inData.Load() {
		c.Conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// Close closes the connection once and frees its slot.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.Conn.Close()
		c.srv.untrack(c)
	})
	return c.closeErr
}

// connOf finds the tracked connection under go-smtp's current one.
func connOf(nc net.Conn) *conn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*conn)
	return c
}

// markTLS returns a copy of cfg that records on the connection that a TLS
// handshake began, so a refusal is never written in clear text into a TLS
// stream.
func markTLS(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	next := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if c := connOf(hello.Conn); c != nil {
			c.tlsStarted.Store(true)
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	return cfg
}

// addrKey is the key of a client address in the per-address limits
// (limit.AddrKey: the address, or its /64 for IPv6).
func addrKey(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			return limit.AddrKey(a)
		}
	}
	return addr.String()
}

// remoteIP is the client's IP address without the port.
func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr()
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// errorLog routes go-smtp's own log lines to slog: panics as errors, accept
// failures as warnings, and the ends of broken connections (a client's doing,
// and common) at debug level.
type errorLog struct{}

func (errorLog) Printf(format string, v ...any) { logSMTP(fmt.Sprintf(format, v...)) }
func (errorLog) Println(v ...any)               { logSMTP(strings.TrimSuffix(fmt.Sprintln(v...), "\n")) }

func logSMTP(msg string) {
	switch {
	case strings.Contains(msg, "panic"):
		slog.Error("Panic in SMTP connection", "detail", msg)
	case strings.HasPrefix(msg, "accept error"):
		slog.Warn("SMTP accept failed", "detail", msg)
	default:
		slog.Debug("SMTP connection ended with an error", "detail", msg)
	}
}

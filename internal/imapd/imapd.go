// Package imapd is Catchbox's IMAP listener: IMAP4rev2 (RFC 9051) with
// IMAP4rev1 (RFC 3501) for older clients, on go-imap's imapserver, so that a
// test suite or a mail client reads a namespace as it would any mailbox.
//
// A client logs in with a namespace's name and SMTP password (mailauth, the
// check SMTP AUTH makes, with the same throttle of failures), and sees one
// mailbox, INBOX: the namespace's unexpired emails, oldest first. UIDs and
// flags are kept in the store per namespace (inbox.Searcher.AssignUIDs,
// migration 0042), so they stay across restarts and replicas. EXPUNGE deletes
// an email as the API's DELETE does. APPEND stores a message as if received.
//
// A mailbox in memory (mailbox.go) is shared by the sessions of a namespace
// and kept up to date by notify's wake-ups, which cross replicas, and a check
// a second; each session's view (view.go) tells its client what changed, at
// once when it idles (RFC 2177).
//
// Every connection is bounded: connections at once (in all and from one
// address), the time a client may stay silent before and after login, the
// rate of its commands, the length of a command line (50 KiB, go-imap's), the
// size of a literal (4 KiB, and the SMTP message limit for APPEND, refused
// before the continuation). docs/imap.md describes it all.
package imapd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Config is the listener's configuration. Zero fields take the defaults below.
type Config struct {
	MaxConnections int // connections open at once; more are answered BYE and closed
	MaxConnsPerIP  int // connections open at once from one address (IPv6: its /64)
	// IdleTimeout is how long a logged-in client may stay silent, IDLE
	// included (RFC 9051 section 5.4 asks for at least 30 minutes).
	IdleTimeout time.Duration
	// CommandTimeout is how long a client not logged in may stay silent, and
	// how long any client may take to send one command.
	CommandTimeout time.Duration
	// CommandRate and CommandBurst bound the commands of one logged-in
	// connection: a client over them waits for its turn.
	CommandRate  float64
	CommandBurst int
	// MaxLoginCommands bounds the commands before a successful login.
	MaxLoginCommands int
	// MaxMessageBytes is the largest APPEND, the SMTP message limit.
	MaxMessageBytes int64

	// TLSConfig enables STARTTLS and the implicit TLS listener; nil offers
	// neither.
	TLSConfig *tls.Config
	// RequireTLS refuses LOGIN and AUTHENTICATE without TLS, as SMTP AUTH.
	RequireTLS bool
	// AccessLog logs every command; without it only failures are logged.
	AccessLog bool
}

// Defaults for zero Config fields.
const (
	DefaultMaxConnections   = 1000
	DefaultMaxConnsPerIP    = 100
	DefaultIdleTimeout      = 30 * time.Minute
	DefaultCommandTimeout   = 30 * time.Second
	DefaultCommandRate      = 1000
	DefaultCommandBurst     = 2000
	DefaultMaxLoginCommands = 50
	DefaultMaxMessageBytes  = 30 << 20
)

// Server is the IMAP listener. It serves any number of net.Listeners.
type Server struct {
	cfg      Config
	auth     *mailauth.Checker
	tenants  *tenant.Service
	searcher *inbox.Searcher
	ingester *inbox.Ingester
	notifier notify.Notifier
	imap     *imapserver.Server
	boxes    *mailboxes
	open     *limit.Conns

	// ctx bounds the store calls made for clients; it ends at Shutdown.
	ctx    context.Context
	cancel context.CancelFunc

	closing atomic.Bool
	mu      sync.Mutex
	conns   map[*imapserver.Conn]struct{}
	wg      sync.WaitGroup // sessions open
}

// New returns an IMAP listener over the inbox, checking logins with auth.
func New(cfg Config, auth *mailauth.Checker, tenants *tenant.Service, searcher *inbox.Searcher, ingester *inbox.Ingester, n notify.Notifier) *Server {
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnsPerIP <= 0 {
		cfg.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	if cfg.CommandRate <= 0 {
		cfg.CommandRate = DefaultCommandRate
	}
	if cfg.CommandBurst <= 0 {
		cfg.CommandBurst = DefaultCommandBurst
	}
	if cfg.MaxLoginCommands <= 0 {
		cfg.MaxLoginCommands = DefaultMaxLoginCommands
	}
	if cfg.MaxMessageBytes <= 0 || cfg.MaxMessageBytes > 1<<32-1 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	s := &Server{cfg: cfg, auth: auth, tenants: tenants, searcher: searcher, ingester: ingester, notifier: n,
		open: limit.NewConns(cfg.MaxConnections, cfg.MaxConnsPerIP), conns: map[*imapserver.Conn]struct{}{}}
	s.boxes = &mailboxes{srv: s, m: map[string]*mailbox{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.imap = imapserver.New(&imapserver.Options{
		NewSession: s.newSession,
		Caps: imap.CapSet{
			imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {},
			imap.CapNamespace: {}, imap.CapUIDPlus: {}, imap.CapESearch: {}, imap.CapSearchRes: {},
			imap.CapMove: {}, imap.CapStatusSize: {},
		},
		Logger:       libraryLog{},
		TLSConfig:    markTLS(cfg.TLSConfig),
		InsecureAuth: !cfg.RequireTLS,
	})
	if cfg.RequireTLS && cfg.TLSConfig == nil {
		slog.Warn("IMAP login is unavailable: TLS is required for it but no certificate is configured")
	}
	return s
}

// Serve accepts connections on l until Shutdown, then returns nil. With tls
// set, l speaks implicit TLS (RFC 8314 section 3.3) with the configured
// certificate.
func (s *Server) Serve(l net.Listener, implicitTLS bool) error {
	if implicitTLS {
		if s.cfg.TLSConfig == nil {
			l.Close()
			return errors.New("imap: implicit TLS needs a certificate")
		}
		l = tls.NewListener(&listener{Listener: l, srv: s, tls: true}, markTLS(s.cfg.TLSConfig))
	} else {
		l = &listener{Listener: l, srv: s}
	}
	slog.Info("IMAP listener started", "addr", l.Addr().String(), "implicit_tls", implicitTLS,
		"starttls", s.cfg.TLSConfig != nil && !implicitTLS, "require_tls", s.cfg.RequireTLS)
	err := s.imap.Serve(l)
	if err != nil && !s.closing.Load() {
		return fmt.Errorf("imap serve %s: %w", l.Addr(), err)
	}
	return nil
}

// Shutdown stops accepting connections, says BYE to every client and closes
// its connection; it returns when the sessions have ended or ctx has.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.closing.Swap(true) {
		return nil
	}
	s.mu.Lock()
	conns := make([]*imapserver.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var bye sync.WaitGroup
	for _, c := range conns {
		bye.Add(1)
		go func() {
			defer bye.Done()
			if nc, ok := c.NetConn().(interface{ SetWriteDeadline(time.Time) error }); ok {
				nc.SetWriteDeadline(time.Now().Add(time.Second))
			}
			c.Bye("Server shutting down, try again later")
		}()
	}
	bye.Wait()
	s.imap.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	defer s.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listener applies the connection limits before go-imap sees a connection.
type listener struct {
	net.Listener
	srv *Server
	tls bool // implicit TLS
}

// Accept returns the next connection under the limits; one over them is
// answered BYE and closed here.
func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.srv.closing.Load() {
			nc.Close()
			return nil, net.ErrClosed
		}
		key := addrKey(nc.RemoteAddr())
		switch l.srv.open.Acquire(key) {
		case limit.Admitted:
			metrics.MailboxConnection("imap", "accepted")
			c := &conn{Conn: nc, srv: l.srv, addrKey: key, bucket: newBucket(l.srv.cfg.CommandRate, l.srv.cfg.CommandBurst)}
			c.tls.Store(l.tls)
			return c, nil
		case limit.TooManyKey:
			refuse(nc, "* BYE Too many connections from your address, try again later\r\n")
		default:
			refuse(nc, "* BYE Too many connections, try again later\r\n")
		}
		metrics.MailboxConnection("imap", "busy")
	}
}

// refuse writes a farewell to a connection over a limit and closes it. A
// fresh socket's send buffer is empty, so the write does not block the accept
// loop; the deadline is a guard all the same.
func refuse(nc net.Conn, bye string) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	io.WriteString(nc, bye)
	nc.Close()
}

// conn is one client connection. go-imap sets a read deadline before it waits
// for a command and before it reads one (35 minutes once logged in, 30 seconds
// otherwise); conn turns those into this listener's limits and counts the
// commands there.
type conn struct {
	net.Conn
	srv     *Server
	addrKey string

	authed     atomic.Bool // the session logged in
	preCommand int         // deadlines set before login
	bucket     *bucket
	tls        atomic.Bool // a TLS handshake began: the bytes seen are not IMAP's
	literals   literalWatch

	closeOnce sync.Once
}

// Deadlines go-imap asks for, told apart by their length.
const (
	libraryIdleWait = 20 * time.Minute // go-imap's 35 min: a logged-in client's silence, IDLE included
	libraryLiteral  = 2 * time.Minute  // go-imap's 5 min: an APPEND literal
)

// Read implements net.Conn, following the command lines (literalWatch).
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.tls.Load() {
		if refusal := c.literals.feed(p[:n]); refusal != "" {
			c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c.Conn, refusal)
			c.Conn.Close()
			return 0, net.ErrClosed
		}
	}
	return n, err
}

// SetReadDeadline implements net.Conn with the listener's time limits and
// command rate. Its errors end the connection (go-imap's read fails).
func (c *conn) SetReadDeadline(t time.Time) error {
	now := time.Now()
	d := t.Sub(now)
	switch {
	case t.IsZero():
		t = now.Add(c.srv.cfg.IdleTimeout)
	case d > libraryIdleWait:
		// Waiting for a logged-in client's next command: one command's turn.
		if wait := c.bucket.take(now); wait > 0 {
			metrics.MailboxThrottled("imap")
			time.Sleep(wait)
			now = time.Now()
		}
		t = now.Add(c.srv.cfg.IdleTimeout)
	case d > libraryLiteral:
		// An APPEND literal: go-imap's own limit.
	default:
		if !c.authed.Load() {
			c.preCommand++
			if c.preCommand > 2*c.srv.cfg.MaxLoginCommands {
				c.Conn.SetWriteDeadline(now.Add(time.Second))
				io.WriteString(c.Conn, "* BYE Too many commands without logging in\r\n")
				return errors.New("imap: too many commands before login")
			}
		}
		t = now.Add(c.srv.cfg.CommandTimeout)
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes the connection once and frees its slot.
func (c *conn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		err = c.Conn.Close()
		c.srv.open.Release(c.addrKey)
	})
	return err
}

// connOf finds the listener's connection under go-imap's current one (a TLS
// connection after STARTTLS or on the implicit TLS listener).
func connOf(nc net.Conn) *conn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*conn)
	return c
}

// markTLS returns a copy of cfg that records on the connection that a TLS
// handshake began (STARTTLS, or the implicit TLS listener), so that nothing is
// read or written on it as plain text from then on. Nil stays nil.
func markTLS(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	next := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if c := connOf(hello.Conn); c != nil {
			c.tls.Store(true)
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	return cfg
}

// bucket is a connection's token bucket of commands.
type bucket struct {
	rate, burst, tokens float64
	at                  time.Time
}

func newBucket(rate float64, burst int) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// take takes a token and returns how long to wait before it was there.
func (b *bucket) take(now time.Time) time.Duration {
	if !b.at.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
	}
	b.at = now
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// addrKey is the key of a client address in the per-address limits.
func addrKey(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			return limit.AddrKey(a)
		}
	}
	return addr.String()
}

// remoteIP is the client's IP address without the port.
func remoteIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// libraryLog routes go-imap's log lines to slog: panics as errors, the rest
// (broken connections, a client's doing) at debug level.
type libraryLog struct{}

func (libraryLog) Printf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "panic") {
		slog.Error("Panic in IMAP connection", "detail", msg)
		return
	}
	slog.Debug("IMAP connection ended with an error", "detail", msg)
}

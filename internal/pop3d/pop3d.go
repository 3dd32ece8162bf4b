// Package pop3d is Catchbox's POP3 listener (RFC 1939), with the extensions
// test suites and mail clients look for: CAPA (RFC 2449), UIDL and TOP, USER
// and PASS, AUTH PLAIN and LOGIN (RFC 5034), STLS (RFC 2595) and implicit TLS
// (RFC 8314).
//
// A client logs in with a namespace's name and SMTP password (mailauth, the
// check SMTP AUTH and IMAP make, with the same throttle of failures). Its
// maildrop is the namespace's unexpired emails as the session starts, oldest
// first; a message's unique id (UIDL) is its email id, the one the API
// returns. RETR and TOP send the raw source byte for byte (or, for a
// namespace that does not capture raw email, the rebuild IMAP sends, with its
// size); DELE marks and QUIT deletes, as the API's DELETE does. Sessions do
// not lock the maildrop: several may read a namespace at once, and an email
// deleted by another meanwhile answers -ERR.
//
// Every connection is bounded as IMAP's are: connections at once, silence
// before and after login, command rate, and a command line of 512 octets
// (RFC 2449 section 4 allows 255 for an argument; AUTH responses are longer:
// they may take 2,048).
package pop3d

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
)

// Config is the listener's configuration. Zero fields take the defaults below.
type Config struct {
	MaxConnections int           // connections open at once; more are answered -ERR and closed
	MaxConnsPerIP  int           // connections open at once from one address (IPv6: its /64)
	IdleTimeout    time.Duration // silence of a logged-in client (RFC 1939 section 3: at least 10 minutes)
	CommandTimeout time.Duration // silence of a client not logged in
	CommandRate    float64       // commands a second one connection may send, sustained
	CommandBurst   int           // commands one connection may send at once
	// MaxLoginCommands bounds the commands before a successful login.
	MaxLoginCommands int

	// TLSConfig enables STLS and the implicit TLS listener; nil offers neither.
	TLSConfig *tls.Config
	// RequireTLS refuses USER, PASS and AUTH without TLS, as SMTP AUTH.
	RequireTLS bool
	// AccessLog logs every command; without it only failures are logged.
	AccessLog bool
}

// Defaults for zero Config fields.
const (
	DefaultMaxConnections   = 500
	DefaultMaxConnsPerIP    = 100
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultCommandTimeout   = 30 * time.Second
	DefaultCommandRate      = 1000
	DefaultCommandBurst     = 2000
	DefaultMaxLoginCommands = 50
)

// Line lengths (RFC 2449 section 4: 255 octets a command line; an AUTH
// response carries base64 of a user name and password).
const (
	maxCommandLine = 512
	maxAuthLine    = 2048
	writeTimeout   = 5 * time.Minute
	storeTimeout   = time.Minute
)

// Server is the POP3 listener. It serves any number of net.Listeners.
type Server struct {
	cfg      Config
	auth     *mailauth.Checker
	searcher *inbox.Searcher
	open     *limit.Conns

	ctx    context.Context
	cancel context.CancelFunc

	closing   atomic.Bool
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	sessions  map[*session]struct{}
	wg        sync.WaitGroup
}

// New returns a POP3 listener over the inbox, checking logins with auth.
func New(cfg Config, auth *mailauth.Checker, searcher *inbox.Searcher) *Server {
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
	if cfg.RequireTLS && cfg.TLSConfig == nil {
		slog.Warn("POP3 login is unavailable: TLS is required for it but no certificate is configured")
	}
	s := &Server{cfg: cfg, auth: auth, searcher: searcher, open: limit.NewConns(cfg.MaxConnections, cfg.MaxConnsPerIP),
		listeners: map[net.Listener]struct{}{}, sessions: map[*session]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Serve accepts connections on l until Shutdown, then returns nil. With
// implicitTLS, l speaks TLS from the first byte (RFC 8314 section 3.3).
func (s *Server) Serve(l net.Listener, implicitTLS bool) error {
	if implicitTLS && s.cfg.TLSConfig == nil {
		l.Close()
		return errors.New("pop3: implicit TLS needs a certificate")
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	slog.Info("POP3 listener started", "addr", l.Addr().String(), "implicit_tls", implicitTLS,
		"stls", s.cfg.TLSConfig != nil && !implicitTLS, "require_tls", s.cfg.RequireTLS)
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return fmt.Errorf("pop3 accept %s: %w", l.Addr(), err)
		}
		key := addrKey(nc.RemoteAddr())
		switch s.open.Acquire(key) {
		case limit.Admitted:
		case limit.TooManyKey:
			metrics.MailboxConnection("pop3", "busy")
			refuse(nc, "-ERR [SYS/TEMP] Too many connections from your address, try again later\r\n")
			continue
		default:
			metrics.MailboxConnection("pop3", "busy")
			refuse(nc, "-ERR [SYS/TEMP] Too many connections, try again later\r\n")
			continue
		}
		metrics.MailboxConnection("pop3", "accepted")
		sess := s.newSession(nc, key, implicitTLS)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			s.open.Release(key)
			return nil
		}
		s.sessions[sess] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go sess.serve()
	}
}

// Shutdown stops accepting connections and closes every session, after the
// command under way: a session between commands is told -ERR and closed at
// once; marked deletions of a session not QUIT are not done (RFC 1939 section
// 6). It returns when the sessions have ended or ctx has.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	for l := range s.listeners {
		l.Close()
	}
	sessions := make([]*session, 0, len(s.sessions))
	for sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	for _, sess := range sessions {
		sess.interrupt()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	defer s.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, sess := range sessions {
			sess.nc.Close()
		}
		return ctx.Err()
	}
}

// refuse writes a farewell to a connection over a limit and closes it.
func refuse(nc net.Conn, msg string) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte(msg))
	nc.Close()
}

func addrKey(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			return limit.AddrKey(a)
		}
	}
	return addr.String()
}

func remoteIP(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// recoverSession logs a panic of a session's goroutine.
func recoverSession(clientIP string) {
	if p := recover(); p != nil {
		slog.Error("Panic in POP3 session", "client_ip", clientIP, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
}

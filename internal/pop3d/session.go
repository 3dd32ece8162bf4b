package pop3d

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// session is one client's conversation, served by one goroutine.
type session struct {
	srv      *Server
	nc       net.Conn // the connection, TLS once STLS or on the implicit TLS listener
	addrKey  string
	clientIP string
	tls      bool
	r        *bufio.Reader
	w        *bufio.Writer
	started  time.Time
	commands int
	rate     struct {
		tokens float64
		at     time.Time
	}

	user string            // USER's argument, until PASS
	ns   *tenant.Namespace // set once logged in (TRANSACTION state)
	msgs []message         // the maildrop, message number i+1 is msgs[i]

	mu        sync.Mutex
	inCommand bool
	stopping  bool
}

// message is one message of the maildrop.
type message struct {
	inbox.Listed
	deleted bool
	size    int64 // -1 until known (a rebuilt message's)
}

var errQuit = errors.New("quit")

func (s *Server) newSession(nc net.Conn, key string, implicitTLS bool) *session {
	sess := &session{srv: s, nc: nc, addrKey: key, clientIP: remoteIP(nc.RemoteAddr()), started: time.Now()}
	if implicitTLS {
		sess.nc = tls.Server(nc, s.cfg.TLSConfig)
		sess.tls = true
	}
	sess.rate.tokens = float64(s.cfg.CommandBurst)
	sess.r = bufio.NewReaderSize(sess.nc, 4096)
	sess.w = bufio.NewWriterSize(sess.nc, 32<<10)
	return sess
}

// serve runs the session to its end and frees its slot.
func (sess *session) serve() {
	s := sess.srv
	metrics.MailboxOpen("pop3", 1)
	defer func() {
		sess.nc.Close()
		s.open.Release(sess.addrKey)
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
		metrics.MailboxOpen("pop3", -1)
		if s.cfg.AccessLog {
			attrs := []any{"client_ip", sess.clientIP, "commands", sess.commands, "duration_ms", time.Since(sess.started).Milliseconds()}
			if sess.ns != nil {
				attrs = append(attrs, "namespace", sess.ns.Name)
			}
			slog.Info("POP3 connection closed", attrs...)
		}
		s.wg.Done()
	}()
	defer recoverSession(sess.clientIP)
	sess.reply("+OK Catchbox POP3 server ready")
	for {
		line, err := sess.readCommand()
		if err != nil {
			sess.mu.Lock()
			stopping := sess.stopping
			sess.mu.Unlock()
			switch {
			case stopping:
				sess.reply("-ERR [SYS/TEMP] Server shutting down, try again later")
			case errors.Is(err, errLineTooLong):
				sess.reply("-ERR Line too long")
			case isTimeout(err):
				sess.reply("-ERR Autologout: idle for too long")
			}
			return
		}
		sess.setInCommand(true)
		err = sess.command(line)
		sess.setInCommand(false)
		if err != nil {
			return
		}
	}
}

func (sess *session) setInCommand(b bool) {
	sess.mu.Lock()
	sess.inCommand = b
	sess.mu.Unlock()
}

// interrupt ends the session for a shutdown: at once when it waits for a
// command, after the command otherwise.
func (sess *session) interrupt() {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.stopping = true
	if !sess.inCommand {
		sess.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

var errLineTooLong = errors.New("line too long")

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// readLine reads one line of at most max octets, without its CRLF (a bare LF
// ends a line too).
func (sess *session) readLine(max int, timeout time.Duration) (string, error) {
	sess.nc.SetReadDeadline(time.Now().Add(timeout))
	var b []byte
	for {
		chunk, err := sess.r.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > max {
			return "", errLineTooLong
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// readCommand waits for the next command, within the silence allowed and the
// connection's command rate.
func (sess *session) readCommand() (string, error) {
	cfg := sess.srv.cfg
	sess.mu.Lock()
	stopping := sess.stopping
	sess.mu.Unlock()
	if stopping {
		return "", errors.New("shutting down")
	}
	timeout := cfg.CommandTimeout
	if sess.ns != nil {
		timeout = cfg.IdleTimeout
		now := time.Now()
		if !sess.rate.at.IsZero() {
			sess.rate.tokens = min(float64(cfg.CommandBurst), sess.rate.tokens+now.Sub(sess.rate.at).Seconds()*cfg.CommandRate)
		}
		sess.rate.at = now
		if sess.rate.tokens--; sess.rate.tokens < 0 {
			metrics.MailboxThrottled("pop3")
			time.Sleep(time.Duration(-sess.rate.tokens / cfg.CommandRate * float64(time.Second)))
		}
	} else if sess.commands >= cfg.MaxLoginCommands {
		sess.reply("-ERR Too many commands without logging in")
		return "", errQuit
	}
	return sess.readLine(maxCommandLine, timeout)
}

// reply writes one line and flushes it.
func (sess *session) reply(format string, args ...any) error {
	sess.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	fmt.Fprintf(sess.w, format, args...)
	sess.w.WriteString("\r\n")
	return sess.w.Flush()
}

// command runs one command line; an error ends the session.
func (sess *session) command(line string) (err error) {
	start := time.Now()
	sess.commands++
	name, arg, _ := strings.Cut(line, " ")
	name = strings.ToUpper(name)
	if !knownCommands[name] {
		name = "UNKNOWN"
	}
	ctx, cancel := context.WithTimeout(sess.srv.ctx, storeTimeout)
	defer cancel()
	result := "ok"
	defer func() {
		if p := recover(); p != nil {
			recoverSessionValue(sess.clientIP, p)
			sess.reply("-ERR [SYS/TEMP] Internal error, try again later")
			result, err = "error", errQuit
		}
		d := time.Since(start)
		metrics.MailboxCommand("pop3", name, result, d)
		if sess.srv.cfg.AccessLog || result == "error" {
			attrs := []any{"command", name, "result", result, "client_ip", sess.clientIP, "duration_ms", float64(d.Microseconds()) / 1000}
			if sess.ns != nil {
				attrs = append(attrs, "namespace", sess.ns.Name)
			}
			slog.Info("POP3 command", attrs...)
		}
	}()
	res, err := sess.dispatch(ctx, name, strings.TrimSpace(arg))
	switch {
	case errors.Is(err, errQuit):
	case err != nil:
		slog.Error("POP3 command failed", "command", name, "client_ip", sess.clientIP, "err", err)
		result = "error"
		sess.reply("-ERR [SYS/TEMP] Temporary failure, try again later")
		return errQuit
	case !res:
		result = "no"
	}
	return err
}

var knownCommands = map[string]bool{"CAPA": true, "USER": true, "PASS": true, "AUTH": true, "STLS": true, "QUIT": true,
	"STAT": true, "LIST": true, "RETR": true, "DELE": true, "NOOP": true, "RSET": true, "TOP": true, "UIDL": true, "APOP": true}

// dispatch answers one command; ok is false when the answer was -ERR.
func (sess *session) dispatch(ctx context.Context, name, arg string) (ok bool, err error) {
	fail := func(msg string) (bool, error) { return false, sess.reply("-ERR %s", msg) }
	switch name {
	case "CAPA":
		return true, sess.capa()
	case "QUIT":
		return sess.quit(ctx)
	}
	if sess.ns == nil {
		switch name {
		case "USER":
			if !sess.authAllowed() {
				return fail("[AUTH] TLS is required: use STLS first")
			}
			if arg == "" {
				return fail("USER needs a name")
			}
			sess.user = arg
			return true, sess.reply("+OK Send the namespace's SMTP password")
		case "PASS":
			if sess.user == "" {
				return fail("USER first")
			}
			user := sess.user
			sess.user = ""
			return sess.login(ctx, "", user, arg)
		case "AUTH":
			return sess.authenticate(ctx, arg)
		case "STLS":
			return sess.startTLS()
		case "APOP":
			return fail("APOP is not offered; use USER and PASS, or AUTH")
		case "UNKNOWN":
			return fail("Unknown command")
		}
		return fail("Log in first")
	}
	switch name {
	case "NOOP":
		return true, sess.reply("+OK")
	case "STAT":
		n, size := 0, int64(0)
		for i := range sess.msgs {
			if !sess.msgs[i].deleted {
				sz, err := sess.size(ctx, i)
				if err != nil {
					return false, err
				}
				n++
				size += sz
			}
		}
		return true, sess.reply("+OK %d %d", n, size)
	case "LIST", "UIDL":
		return sess.list(ctx, name, arg)
	case "RETR", "TOP":
		return sess.retrieve(ctx, name, arg)
	case "DELE":
		i, msg := sess.message(arg)
		if msg != "" {
			return fail(msg)
		}
		sess.msgs[i].deleted = true
		return true, sess.reply("+OK Message %d marked for deletion", i+1)
	case "RSET":
		for i := range sess.msgs {
			sess.msgs[i].deleted = false
		}
		return true, sess.reply("+OK %d messages", len(sess.msgs))
	case "USER", "PASS", "AUTH", "APOP":
		return fail("Already logged in")
	case "STLS":
		return fail("STLS is only allowed before login")
	}
	return fail("Unknown command")
}

// authAllowed reports whether credentials may be sent now (the TLS rule of
// SMTP AUTH).
func (sess *session) authAllowed() bool {
	return sess.tls || !sess.srv.cfg.RequireTLS
}

// capa answers CAPA (RFC 2449 section 5).
func (sess *session) capa() error {
	lines := []string{"+OK Capability list follows", "TOP", "UIDL", "RESP-CODES", "AUTH-RESP-CODE", "PIPELINING", "EXPIRE NEVER", "IMPLEMENTATION Catchbox"}
	if sess.ns == nil {
		if sess.srv.cfg.TLSConfig != nil && !sess.tls {
			lines = append(lines, "STLS")
		}
		if sess.authAllowed() {
			lines = append(lines, "USER", "SASL "+mailauth.MechPlain+" "+mailauth.MechLogin)
		}
	}
	sess.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	for _, l := range lines {
		sess.w.WriteString(l + "\r\n")
	}
	sess.w.WriteString(".\r\n")
	return sess.w.Flush()
}

// startTLS answers STLS (RFC 2595 section 4) and starts TLS on the connection.
func (sess *session) startTLS() (bool, error) {
	if sess.srv.cfg.TLSConfig == nil || sess.tls {
		return false, sess.reply("-ERR STLS is not available")
	}
	if err := sess.reply("+OK Begin TLS negotiation"); err != nil {
		return false, err
	}
	if sess.r.Buffered() > 0 {
		return false, errQuit // commands sent before the handshake (RFC 2595 section 4)
	}
	tc := tls.Server(sess.nc, sess.srv.cfg.TLSConfig)
	tc.SetDeadline(time.Now().Add(sess.srv.cfg.CommandTimeout))
	if err := tc.Handshake(); err != nil {
		slog.Debug("POP3 TLS handshake failed", "client_ip", sess.clientIP, "err", err)
		return false, errQuit
	}
	tc.SetDeadline(time.Time{})
	sess.nc, sess.tls = tc, true
	sess.r.Reset(tc)
	sess.w.Reset(tc)
	sess.user = ""
	return true, nil
}

// authenticate answers AUTH (RFC 5034): without an argument, the list of
// mechanisms; with one, its exchange.
func (sess *session) authenticate(ctx context.Context, arg string) (bool, error) {
	if arg == "" {
		sess.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		sess.w.WriteString("+OK\r\n" + mailauth.MechPlain + "\r\n" + mailauth.MechLogin + "\r\n.\r\n")
		return true, sess.w.Flush()
	}
	if !sess.authAllowed() {
		return false, sess.reply("-ERR [AUTH] TLS is required: use STLS first")
	}
	mech, initial, hasInitial := strings.Cut(arg, " ")
	var loggedIn bool
	var loginErr error
	errMalformed := errors.New("malformed")
	server := mailauth.NewServer(strings.ToUpper(mech), func(identity, username, password string) error {
		loggedIn, loginErr = sess.login(ctx, identity, username, password)
		return loginErr
	}, mailauth.SASLErrors{Malformed: errMalformed, Unexpected: errMalformed})
	if server == nil {
		return false, sess.reply("-ERR Unsupported authentication mechanism")
	}
	var resp []byte
	if hasInitial {
		if initial == "=" {
			resp = []byte{}
		} else {
			b, err := base64.StdEncoding.DecodeString(initial)
			if err != nil {
				return false, sess.reply("-ERR Malformed authentication response")
			}
			resp = b
		}
	}
	for {
		challenge, done, err := server.Next(resp)
		if done || err != nil {
			switch {
			case errors.Is(err, errMalformed):
				return false, sess.reply("-ERR Malformed authentication response")
			case loginErr != nil:
				return false, loginErr // an error of the connection; login answered the rest
			}
			return loggedIn, nil
		}
		if err := sess.reply("+ %s", base64.StdEncoding.EncodeToString(challenge)); err != nil {
			return false, err
		}
		line, err := sess.readLine(maxAuthLine, sess.srv.cfg.CommandTimeout)
		if err != nil {
			return false, errQuit
		}
		if line == "*" {
			return false, sess.reply("-ERR Authentication cancelled")
		}
		if resp, err = base64.StdEncoding.DecodeString(line); err != nil {
			return false, sess.reply("-ERR Malformed authentication response")
		}
	}
}

// login checks the credentials, answers, and loads the maildrop. A wrong
// password is answered -ERR [AUTH] (RFC 3206); a returned error ends the
// connection.
func (sess *session) login(ctx context.Context, identity, username, password string) (bool, error) {
	if !sess.authAllowed() {
		return false, sess.reply("-ERR [AUTH] TLS is required: use STLS first")
	}
	ns, err := sess.srv.auth.Check(ctx, mailauth.Client{Protocol: "pop3", IP: sess.clientIP, AddrKey: sess.addrKey}, identity, username, password)
	switch {
	case errors.Is(err, mailauth.ErrThrottled):
		sess.reply("-ERR [AUTH] Too many failed logins from your address, try again later")
		return false, errQuit
	case errors.Is(err, mailauth.ErrFailed):
		return false, sess.reply("-ERR [AUTH] Authentication failed")
	case err != nil:
		return false, sess.reply("-ERR [SYS/TEMP] Temporary failure, try again later")
	}
	listed, err := sess.srv.searcher.List(ctx, ns.ID)
	if err != nil {
		return false, err
	}
	sess.ns = &ns
	sess.msgs = make([]message, len(listed))
	for i, l := range listed {
		sess.msgs[i] = message{Listed: l, size: -1}
		if l.RawKept {
			sess.msgs[i].size = l.Size
		}
	}
	return true, sess.reply("+OK Logged in: %d messages", len(sess.msgs))
}

// message finds the message numbered arg that is not marked deleted.
func (sess *session) message(arg string) (int, string) {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 1 || n > len(sess.msgs) {
		return 0, "No such message"
	}
	if sess.msgs[n-1].deleted {
		return 0, "Message already deleted"
	}
	return n - 1, ""
}

// size is a message's size in octets: as received, or of its rebuild.
func (sess *session) size(ctx context.Context, i int) (int64, error) {
	if sess.msgs[i].size < 0 {
		src, err := sess.source(ctx, i)
		if err != nil {
			return 0, err
		}
		sess.msgs[i].size = int64(len(src))
	}
	return sess.msgs[i].size, nil
}

func (sess *session) source(ctx context.Context, i int) ([]byte, error) {
	src, _, err := sess.srv.searcher.Source(ctx, sess.msgs[i].ID)
	return src, err
}

// list answers LIST and UIDL, for one message or all (RFC 1939 sections 5
// and 7).
func (sess *session) list(ctx context.Context, name, arg string) (bool, error) {
	value := func(i int) (string, error) {
		if name == "UIDL" {
			return sess.msgs[i].ID, nil
		}
		n, err := sess.size(ctx, i)
		return strconv.FormatInt(n, 10), err
	}
	if arg != "" {
		i, msg := sess.message(arg)
		if msg != "" {
			return false, sess.reply("-ERR %s", msg)
		}
		v, err := value(i)
		if err != nil {
			return false, err
		}
		return true, sess.reply("+OK %d %s", i+1, v)
	}
	var b strings.Builder
	b.WriteString("+OK\r\n")
	for i := range sess.msgs {
		if sess.msgs[i].deleted {
			continue
		}
		v, err := value(i)
		if err != nil {
			return false, err
		}
		fmt.Fprintf(&b, "%d %s\r\n", i+1, v)
	}
	b.WriteString(".\r\n")
	sess.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	sess.w.WriteString(b.String())
	return true, sess.w.Flush()
}

// retrieve answers RETR and TOP: the message (TOP: its header and the first
// lines of its body), dot-stuffed (RFC 1939 section 3).
func (sess *session) retrieve(ctx context.Context, name, arg string) (bool, error) {
	fields := strings.Fields(arg)
	lines := -1
	if name == "TOP" {
		if len(fields) != 2 {
			return false, sess.reply("-ERR TOP needs a message number and a number of lines")
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 {
			return false, sess.reply("-ERR Bad number of lines")
		}
		lines = n
	} else if len(fields) != 1 {
		return false, sess.reply("-ERR RETR needs a message number")
	}
	i, msg := sess.message(fields[0])
	if msg != "" {
		return false, sess.reply("-ERR %s", msg)
	}
	src, err := sess.source(ctx, i)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, inbox.ErrRawNotCaptured) {
		return false, sess.reply("-ERR Message deleted by another client")
	}
	if err != nil {
		return false, err
	}
	if lines >= 0 {
		src = top(src, lines)
	}
	sess.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if name == "RETR" {
		fmt.Fprintf(sess.w, "+OK %d octets\r\n", len(src))
	} else {
		sess.w.WriteString("+OK\r\n")
	}
	if err := writeStuffed(sess.w, src); err != nil {
		return false, err
	}
	return true, sess.w.Flush()
}

// top is the header of a message, the empty line after it, and the first n
// lines of its body.
func top(src []byte, n int) []byte {
	end := bytes.Index(src, []byte("\r\n\r\n"))
	sep := 4
	if lf := bytes.Index(src, []byte("\n\n")); lf >= 0 && (end < 0 || lf < end) {
		end, sep = lf, 2
	}
	if end < 0 {
		return src
	}
	i := end + sep
	for ; n > 0 && i < len(src); n-- {
		nl := bytes.IndexByte(src[i:], '\n')
		if nl < 0 {
			i = len(src)
			break
		}
		i += nl + 1
	}
	return src[:i]
}

// writeStuffed writes a multi-line response's body: every line that starts
// with "." gets another, the last line is ended with CRLF if it was not, and
// the terminating "." line follows.
func writeStuffed(w *bufio.Writer, src []byte) error {
	atLineStart := true
	for len(src) > 0 {
		if atLineStart && src[0] == '.' {
			w.WriteByte('.')
		}
		nl := bytes.IndexByte(src, '\n')
		if nl < 0 {
			w.Write(src)
			w.WriteString("\r\n")
			atLineStart = true
			break
		}
		w.Write(src[:nl+1])
		src = src[nl+1:]
		atLineStart = true
	}
	_, err := w.WriteString(".\r\n")
	return err
}

// quit answers QUIT: in the TRANSACTION state the marked messages are
// deleted first (the UPDATE state, RFC 1939 section 6), as the API's DELETE
// deletes.
func (sess *session) quit(ctx context.Context) (bool, error) {
	if sess.ns != nil {
		var ids []string
		for _, m := range sess.msgs {
			if m.deleted {
				ids = append(ids, m.ID)
			}
		}
		if len(ids) > 0 {
			if _, err := sess.srv.searcher.DeleteEmails(ctx, sess.ns.ID, ids); err != nil {
				slog.Error("POP3 QUIT could not delete the marked messages", "namespace", sess.ns.Name, "err", err)
				sess.reply("-ERR [SYS/TEMP] Some deleted messages were not removed")
				return false, errQuit
			}
		}
	}
	sess.reply("+OK Bye")
	return true, errQuit
}

func recoverSessionValue(clientIP string, p any) {
	slog.Error("Panic in POP3 command", "client_ip", clientIP, "panic", fmt.Sprint(p))
}

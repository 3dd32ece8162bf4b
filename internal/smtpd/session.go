package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/tenant"
)

// session is one client's conversation from EHLO (or STARTTLS, which starts a
// new one) to QUIT. go-smtp calls its methods from the connection's goroutine,
// except Data under BDAT, which it calls from a goroutine of its own.
type session struct {
	srv      *Server
	conn     *conn // nil only if the listener was bypassed
	smtpConn *smtp.Conn
	clientIP string
	addrKey  string // the client address's key in the per-address limits
	tls      bool

	// authNS is the namespace the client authenticated as; nil for MX mail.
	authNS *tenant.Namespace

	// The mail transaction (RFC 5321 section 3.3), cleared by Reset.
	inMail  bool
	utf8    bool
	env     inbox.Envelope
	targets []inbox.Target
	target  map[string]int  // namespace id -> index in targets
	seen    map[string]bool // lower-case recipient addresses accepted
	rcpts   int             // distinct recipients accepted
	// returns are the outbound emails whose return paths are recipients.
	returns []string
	refused int // recipients refused (RCPT answered 4xx or 5xx)
	// dataStarted is set once DATA (or the first BDAT) starts: the
	// transaction's log line is then Data's to write, not Reset's. Under BDAT
	// Data runs beside the connection's goroutine, hence atomic.
	dataStarted atomic.Bool

	// faults names the fault rules that fired in the transaction, for its
	// log line. dataChecked is set once the data stage's rules were asked
	// (before the 354, beforeData); refusedData is the fault that refused
	// DATA there, for Data to log.
	faults      []string
	dataChecked atomic.Bool
	refusedData atomic.Pointer[chaos.Fault]

	// nsCache keeps namespaces found during the session, by name.
	nsCache map[string]tenant.Namespace
}

var (
	_ smtp.Session     = (*session)(nil)
	_ smtp.AuthSession = (*session)(nil)
)

func (s *Server) newSession(c *smtp.Conn) (_ smtp.Session, err error) {
	defer func() {
		if p := recover(); p != nil {
			logPanic("new session", p, "")
			err = errInternal
		}
	}()
	sess := &session{srv: s, smtpConn: c, clientIP: remoteIP(c.Conn()), addrKey: addrKey(c.Conn().RemoteAddr())}
	_, sess.tls = c.TLSConnectionState()
	if cn := connOf(c.Conn()); cn != nil {
		cn.smtpConn = c
		cn.sess = sess
		sess.conn = cn
		if _, ok := cn.Conn.(*tls.Conn); ok {
			sess.tls = true // served on a TLS listener
		}
	}
	return sess, nil
}

func logPanic(op string, p any, clientIP string) {
	slog.Error("Panic in SMTP session", "op", op, "client_ip", clientIP, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// guard turns a panic in a session method into a 451 reply and a log line.
func (s *session) guard(op string, err *error) {
	if p := recover(); p != nil {
		logPanic(op, p, s.clientIP)
		if err != nil {
			*err = errInternal
		}
	}
}

// AuthMechanisms implements smtp.AuthSession. Nothing is advertised where AUTH
// would be refused (RFC 4954 section 4 / RFC 3207 section 4.2).
func (s *session) AuthMechanisms() (mechs []string) {
	defer s.guard("auth mechanisms", nil)
	if s.srv.cfg.RequireTLS && !s.tls {
		return nil
	}
	return []string{mechPlain, mechLogin}
}

// Auth implements smtp.AuthSession: namespace name and SMTP password.
func (s *session) Auth(mech string) (_ sasl.Server, err error) {
	defer s.guard("auth", &err)
	if s.srv.cfg.RequireTLS && !s.tls {
		return nil, errTLSRequired
	}
	if s.inMail {
		return nil, errAuthInMail // RFC 4954 section 4
	}
	if s.srv.auth.Throttled(s.client()) {
		return nil, s.authThrottled()
	}
	srv := mailauth.NewServer(strings.ToUpper(mech), s.checkCredentials, saslErrors)
	if srv == nil {
		return nil, errAuthMechanism
	}
	return guardedSASL{srv: srv, s: s}, nil
}

// guardedSASL recovers panics in a SASL exchange, where the store is consulted.
type guardedSASL struct {
	srv sasl.Server
	s   *session
}

func (g guardedSASL) Next(response []byte) (challenge []byte, done bool, err error) {
	defer g.s.guard("auth exchange", &err)
	return g.srv.Next(response)
}

// checkCredentials accepts a namespace name as username with the namespace's
// SMTP password: mailauth's check, shared with IMAP and POP3, which charges
// the attempt to the client address's throttle before it looks, and gives
// the charge back when the credentials are right.
func (s *session) checkCredentials(identity, username, password string) error {
	ns, err := s.srv.auth.Check(s.srv.ctx, s.client(), identity, username, password)
	switch {
	case errors.Is(err, mailauth.ErrThrottled):
		return s.authThrottled()
	case errors.Is(err, mailauth.ErrFailed):
		return errAuthFailed
	case err != nil:
		return errAuthTemporary
	}
	s.authNS = &ns
	return nil
}

// client is the session's client for mailauth.
func (s *session) client() mailauth.Client {
	return mailauth.Client{Protocol: "smtp", IP: s.clientIP, AddrKey: s.addrKey}
}

// authThrottled refuses AUTH from an address that has used up its attempts
// (mailauth logged and counted it): 421, and the connection is closed after
// the reply.
func (s *session) authThrottled() error {
	if s.conn != nil {
		s.conn.closeNext = true
	}
	return errAuthThrottled
}

// namespace finds a namespace by (valid, lower-case) name, once per session;
// routing.ErrNoNamespace when there is none.
func (s *session) namespace(name string) (tenant.Namespace, error) {
	if ns, ok := s.nsCache[name]; ok {
		return ns, nil
	}
	ctx, cancel := context.WithTimeout(s.srv.ctx, storeTimeout)
	defer cancel()
	ns, err := s.srv.routes.Namespace(ctx, name)
	if err != nil {
		return tenant.Namespace{}, err
	}
	if s.nsCache == nil {
		s.nsCache = map[string]tenant.Namespace{}
	}
	s.nsCache[name] = ns
	return ns, nil
}

// Mail implements smtp.Session: it starts a transaction and records the
// envelope (RFC 5321 section 4.1.1.2). go-smtp has checked SIZE against the
// limit (RFC 1870).
func (s *session) Mail(from string, opts *smtp.MailOptions) (err error) {
	defer s.guard("mail", &err)
	utf8 := opts != nil && opts.UTF8
	if s.inMail {
		return errNestedMail
	}
	if !utf8 && !isASCII(from) {
		return errUTF8Required // RFC 6531 section 3.5
	}
	s.reset()
	env := inbox.Envelope{ClientIP: s.clientIP, Helo: s.smtpConn.Hostname(), MailFrom: from}
	if s.authNS != nil {
		if fault, ok := s.fault(*s.authNS, chaos.StageMail, from); ok {
			s.faults = append(s.faults, faultName(*s.authNS, fault))
			if err := s.act(fault); err != nil {
				// The transaction never starts: its log line is written here.
				transaction{env: env, targets: []inbox.Target{{Namespace: *s.authNS}}, faults: s.faults}.log("faulted", err)
				s.faults = nil
				return err
			}
		}
	}
	s.inMail = true
	s.utf8 = utf8
	s.env = env
	return nil
}

// Rcpt implements smtp.Session: it accepts a recipient of an existing
// namespace (of the authenticated one after AUTH), or, from an
// unauthenticated client, a recipient of no namespace into the catch-all
// namespace when there is one, and groups recipients by namespace. A repeated
// address is accepted again and counts once. Which namespace an address
// reaches is routing's rule, shared with the delivery of outbound mail; the
// order of the checks, the catch-all and the replies are the session's.
func (s *session) Rcpt(to string, opts *smtp.RcptOptions) (err error) {
	defer s.guard("rcpt", &err)
	defer func() {
		if err != nil && s.inMail {
			s.refused++
		}
	}()
	if !s.inMail {
		return errNeedMail
	}
	rcpt, perr := s.srv.routes.Parse(to)
	if errors.Is(perr, routing.ErrSyntax) {
		return errBadAddress
	}
	if !s.utf8 && !isASCII(rcpt.Mailbox) {
		return errUTF8Required
	}
	if s.authNS != nil && (perr != nil || !rcpt.In(*s.authNS)) {
		return errNotOwnNamespace
	}
	key := strings.ToLower(rcpt.Mailbox)
	if perr != nil && s.srv.cfg.Returns != nil {
		if id, ok := s.srv.cfg.Returns.ReturnPath(key); ok {
			return s.rcptReturnPath(key, id)
		}
	}
	if s.seen[key] {
		return nil
	}
	if s.rcpts >= s.srv.cfg.MaxRecipients {
		return errTooManyRcpts // RFC 5321 section 4.5.3.1.10
	}
	var ns tenant.Namespace
	switch {
	case s.authNS != nil:
		ns = *s.authNS
	case perr != nil && s.srv.routes.LooksLikeReturnPath(key):
		return s.srv.noSuchMailbox // a forged or stale return path is caught by no one
	case perr != nil:
		if ns, err = s.catchAll(); err != nil {
			return err
		}
	default:
		ns, err = s.namespace(rcpt.Namespace)
		if errors.Is(err, routing.ErrNoNamespace) {
			ns, err = s.catchAll()
		}
		if err != nil {
			if !errors.Is(err, s.srv.noSuchMailbox) {
				slog.Error("Looking up an SMTP recipient's namespace failed", "client_ip", s.clientIP, "err", err)
				return errTempLookup
			}
			return err
		}
	}
	if fault, ok := s.fault(ns, chaos.StageRcpt, rcpt.Mailbox); ok {
		s.faults = append(s.faults, faultName(ns, fault))
		if err := s.act(fault); err != nil {
			return err
		}
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
		s.target = map[string]int{}
	}
	s.seen[key] = true
	s.rcpts++
	i, ok := s.target[ns.ID]
	if !ok {
		i = len(s.targets)
		s.target[ns.ID] = i
		s.targets = append(s.targets, inbox.Target{Namespace: ns})
	}
	s.targets[i].Recipients = append(s.targets[i].Recipients, rcpt.Mailbox)
	return nil
}

// catchAll is the catch-all namespace, for a recipient of no namespace; the
// 550 that names the accepted addresses when there is none, or when it has
// been deleted (logged once until it is back).
func (s *session) catchAll() (tenant.Namespace, error) {
	name := s.srv.cfg.CatchAll
	if name == "" {
		return tenant.Namespace{}, s.srv.noSuchMailbox
	}
	ns, err := s.namespace(name)
	if errors.Is(err, routing.ErrNoNamespace) {
		if !s.srv.catchAllMissing.Swap(true) {
			slog.Warn("The catch-all namespace does not exist: mail to addresses of no namespace is refused until it is created (catchbox admin namespace create NAME --org ORG) or CATCHBOX_CATCH_ALL changes",
				"catch_all", name)
		}
		return tenant.Namespace{}, s.srv.noSuchMailbox
	}
	if err == nil {
		s.srv.catchAllMissing.Store(false)
	}
	return ns, err
}

// rcptReturnPath accepts a return path of outbound mail (an address of the
// bare mail domain, lower-cased as key, made for the outbound email id) from
// an unauthenticated client.
func (s *session) rcptReturnPath(key, id string) error {
	if s.seen[key] {
		return nil
	}
	if s.rcpts >= s.srv.cfg.MaxRecipients {
		return errTooManyRcpts
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
		s.target = map[string]int{}
	}
	s.seen[key] = true
	s.rcpts++
	s.returns = append(s.returns, id)
	return nil
}

// Data implements smtp.Session: it reads the message, stores it once per
// namespace, hands it to Returns once if it was sent to return paths, and
// answers 250 only after the commits. Returns goes first: recording a
// report twice is a no-op, so a retry after a failed store repeats nothing.
func (s *session) Data(r io.Reader) (err error) {
	defer s.guard("data", &err)
	if s.conn != nil {
		s.conn.beginData()
		defer s.conn.endData()
	}
	if !s.inMail || len(s.targets) == 0 && len(s.returns) == 0 {
		s.discardMessage(r)
		return errNeedMail
	}
	// Under BDAT this runs beside the connection's goroutine, which may Reset
	// the session: work on a copy of the envelope.
	s.dataStarted.Store(true)
	tx := transaction{env: s.env, targets: s.targets, rcpts: s.rcpts, refused: s.refused, returns: s.returns, faults: s.faults}
	if f := s.refusedData.Swap(nil); f != nil {
		// A data-stage rule answered DATA in place of the 354 (beforeData):
		// no message follows, and go-smtp's reply to this one is swallowed.
		var reply error = errDropped
		if f.Reply != nil {
			reply = faultReply(f.Reply)
		}
		tx.log("faulted", reply)
		return reply
	}
	var refuse *chaos.Fault // a rule's refusal of the message, once it is read
	if !s.dataChecked.Load() {
		// The 354 went out before the rules could act (a connection upgraded
		// by STARTTLS, or BDAT): they act now, mid-DATA.
		if fault, name, ok := s.dataFault(chaos.StageData, tx.targets); ok {
			tx.faults = append(tx.faults[:len(tx.faults):len(tx.faults)], name)
			s.pause(fault.Delay)
			if fault.Disconnect && fault.Reply == nil {
				s.drop()
				tx.log("faulted", errDropped)
				return errDropped
			}
			if fault.Reply != nil || fault.Disconnect {
				refuse = &fault
			}
		}
	}
	raw, err := s.readMessage(r)
	tx.size = len(raw)
	if err != nil {
		tx.log("rejected", err)
		return err
	}
	if refuse == nil {
		if fault, name, ok := s.dataFault(chaos.StageAfterData, tx.targets); ok {
			tx.faults = append(tx.faults[:len(tx.faults):len(tx.faults)], name)
			s.pause(fault.Delay)
			if fault.Reply != nil || fault.Disconnect {
				refuse = &fault
			}
		}
	}
	if refuse != nil {
		// Refused by a rule: nothing is stored.
		err := s.act(chaos.Fault{Reply: refuse.Reply, Disconnect: refuse.Disconnect})
		tx.log("faulted", err)
		return err
	}
	ctx, cancel := context.WithTimeout(s.srv.ctx, deliverTimeout)
	defer cancel()
	if len(tx.returns) > 0 {
		if err := s.srv.cfg.Returns.Receive(ctx, raw, tx.env.MailFrom, tx.returns); err != nil {
			slog.Error("Recording a report sent to a return path failed", "client_ip", s.clientIP, "size", len(raw), "err", err)
			tx.log("failed", errTempStore)
			return errTempStore
		}
	}
	if len(tx.targets) == 0 {
		tx.log("stored", replyStored)
		return replyStored
	}
	if _, err := s.srv.ingester.Deliver(ctx, raw, tx.env, tx.targets); err != nil {
		slog.Error("Storing a message received over SMTP failed", "client_ip", s.clientIP, "namespaces", len(tx.targets), "size", len(raw), "err", err)
		tx.log("failed", errTempStore)
		return errTempStore
	}
	tx.log("stored", replyStored)
	return replyStored
}

// transaction is one mail transaction (MAIL to the end of DATA, or to RSET or
// QUIT), as its log line tells it.
type transaction struct {
	env     inbox.Envelope
	targets []inbox.Target
	rcpts   int // recipients accepted
	refused int // recipients refused
	size    int // bytes of message data read
	// returns are the outbound emails whose return paths were recipients.
	returns []string
	// faults are the fault rules that fired (chaos.Fault.String, after the
	// namespace's name).
	faults []string
}

// log writes the transaction's one log line and counts it in the metrics.
// result is stored, rejected (every recipient or the message refused),
// failed (not stored: the sender was told to retry) or aborted (ended
// before DATA with a recipient accepted). reply is the last reply of the
// transaction, nil for none.
func (t transaction) log(result string, reply error) {
	metrics.SMTPMessage(result)
	names := make([]string, 0, len(t.targets))
	for _, tg := range t.targets {
		names = append(names, tg.Namespace.Name)
	}
	attrs := []slog.Attr{
		slog.String("client_ip", t.env.ClientIP),
		slog.String("helo", t.env.Helo),
		slog.String("sender", t.env.MailFrom),
		slog.Int("recipients", t.rcpts),
		slog.Int("refused_recipients", t.refused),
		slog.String("namespace", strings.Join(names, ",")),
		slog.Int("return_paths", len(t.returns)),
		slog.Int("size", t.size),
		slog.String("result", result),
	}
	var se *smtp.SMTPError
	if errors.As(reply, &se) {
		attrs = append(attrs, slog.Int("reply", se.Code))
	}
	if len(t.faults) > 0 {
		attrs = append(attrs, slog.String("chaos", strings.Join(t.faults, ", ")))
	}
	level := slog.LevelInfo
	if result == "failed" {
		level = slog.LevelWarn
	}
	slog.LogAttrs(context.Background(), level, "SMTP transaction", attrs...)
}

// readMessage reads the message, at most MaxMessageBytes of it. A message
// sent with DATA is read by readDot (data.go: go-smtp's own reading misses
// some ends of data); one sent with BDAT through go-smtp's pipe, bounded
// here. The bytes are kept as the sender meant them, dot-stuffing removed:
// the raw source a test downloads is what the sender sent. The trace
// information a Received field would carry (client IP, HELO name, envelope
// sender) is stored beside the message instead.
func (s *session) readMessage(r io.Reader) ([]byte, error) {
	max := s.srv.cfg.MaxMessageBytes
	br, err := dotBuffer(r)
	switch {
	case err == nil:
		raw, err := readDot(br, max)
		if errors.Is(err, errDotTooBig) {
			return nil, errTooBig
		}
		if err != nil {
			return nil, s.readError(err)
		}
		return raw, nil
	case errors.Is(err, errUnknownDataReader):
		unknownDataReader.Do(func() {
			slog.Warn("The SMTP library's DATA reader is not the one Catchbox reads through: its own reading is used, which misses an end of data after CR CR LF",
				"reader", fmt.Sprintf("%T", r))
		})
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	var smtpError *smtp.SMTPError
	switch {
	case err == nil && n > max, errors.As(err, &smtpError) && smtpError.Code == 552:
		return nil, errTooBig
	case err == nil:
		return buf.Bytes(), nil
	default:
		return nil, s.readError(err)
	}
}

// readError is the reply to a message whose reading failed.
func (s *session) readError(err error) error {
	var smtpError *smtp.SMTPError
	var netErr net.Error
	switch {
	case errors.Is(err, smtp.ErrTooLongLine):
		return errLineTooLong
	case errors.As(err, &netErr) && netErr.Timeout():
		return errReadTimeout
	case errors.As(err, &smtpError):
		return smtpError
	default:
		slog.Debug("Reading an SMTP message failed", "client_ip", s.clientIP, "err", err)
		return errReadFailed
	}
}

// discardMessage reads a message that is refused before it is read to its
// end, so that the reply follows the client's end of data.
func (s *session) discardMessage(r io.Reader) {
	if br, err := dotBuffer(r); err == nil {
		readDot(br, 0)
		return
	}
	io.Copy(io.Discard, r)
}

// Reset implements smtp.Session: it ends the transaction (RSET, a new EHLO, the
// end of DATA). Authentication survives it.
func (s *session) Reset() {
	defer s.guard("reset", nil)
	s.reset()
}

func (s *session) reset() {
	s.endTransaction()
	s.inMail = false
	s.refused = 0
	s.dataStarted.Store(false)
	s.utf8 = false
	s.env = inbox.Envelope{}
	s.targets = nil
	s.target = nil
	s.seen = nil
	s.rcpts = 0
	s.returns = nil
	s.faults = nil
	s.dataChecked.Store(false)
	s.refusedData.Store(nil)
}

// Logout implements smtp.Session. The session holds nothing to free.
func (s *session) Logout() (err error) {
	defer s.guard("logout", &err)
	s.endTransaction()
	return nil
}

// endTransaction logs a transaction that ends without DATA (RSET, a new
// EHLO, QUIT, a dropped connection): rejected when no recipient was
// accepted, aborted otherwise. One that reached DATA was logged by Data.
func (s *session) endTransaction() {
	if !s.inMail || s.dataStarted.Load() {
		return
	}
	result := "aborted"
	if s.rcpts == 0 {
		result = "rejected"
	}
	transaction{env: s.env, targets: s.targets, rcpts: s.rcpts, refused: s.refused, faults: s.faults}.log(result, nil)
	s.inMail = false
}

// isASCII reports whether s is plain ASCII; other addresses need SMTPUTF8
// (RFC 6531 section 3.5).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

package imapd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-sasl"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/tenant"
)

// inboxName is the one mailbox: the namespace.
const inboxName = "INBOX"

// storeTimeout bounds one command's store work.
const storeTimeout = time.Minute

// session is one client's conversation. go-imap calls its methods from the
// connection's goroutine, except Idle, which it calls from another while the
// connection's goroutine waits for DONE; nothing else runs during Idle.
type session struct {
	srv      *Server
	imapConn *imapserver.Conn
	conn     *conn // nil only if the listener was bypassed
	clientIP string
	started  time.Time
	commands int

	ns *tenant.Namespace // set once logged in
	mb *mailbox          // held while logged in
	// view is the selected mailbox. go-imap may end the connection while an
	// IDLE's goroutine still runs (a client gone during IDLE), so viewMu
	// orders Idle's reading of it with Close's clearing.
	viewMu sync.Mutex
	view   *view
}

var (
	_ imapserver.SessionIMAP4rev2   = (*session)(nil)
	_ imapserver.SessionSASL        = (*session)(nil)
	_ imapserver.SessionAppendLimit = (*session)(nil)
)

func (s *Server) newSession(c *imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
	if s.closing.Load() {
		return nil, nil, &imap.Error{Type: imap.StatusResponseTypeBye, Text: "Server shutting down, try again later"}
	}
	sess := &session{srv: s, imapConn: c, conn: connOf(c.NetConn()), clientIP: remoteIP(c.NetConn().RemoteAddr()), started: time.Now()}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(1)
	metrics.MailboxOpen("imap", 1)
	return sess, nil, nil
}

// Close implements imapserver.Session: the connection ended.
func (s *session) Close() error {
	defer s.srv.wg.Done()
	s.srv.mu.Lock()
	delete(s.srv.conns, s.imapConn)
	s.srv.mu.Unlock()
	metrics.MailboxOpen("imap", -1)
	s.unselect()
	if s.mb != nil {
		s.srv.boxes.release(s.mb)
		s.mb = nil
	}
	if s.conn != nil {
		s.conn.Close()
	}
	attrs := []any{"client_ip", s.clientIP, "commands", s.commands, "duration_ms", time.Since(s.started).Milliseconds()}
	if s.ns != nil {
		attrs = append(attrs, "namespace", s.ns.Name)
	}
	if s.srv.cfg.AccessLog {
		slog.Info("IMAP connection closed", attrs...)
	}
	return nil
}

// do runs one command: it recovers a panic as a server error, bounds the
// store work, counts and logs the command, and turns an unexpected error into
// a generic NO (go-imap would write a plain error's text to the client).
func (s *session) do(command string, fn func(ctx context.Context) error) (err error) {
	start := time.Now()
	s.commands++
	ctx, cancel := context.WithTimeout(s.srv.ctx, storeTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Panic in IMAP session", "command", command, "client_ip", s.clientIP, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = errInternal
		}
		result := "ok"
		var imapErr *imap.Error
		switch {
		case err == nil:
		case errors.As(err, &imapErr):
			result = strings.ToLower(string(imapErr.Type))
		default:
			slog.Error("IMAP command failed", "command", command, "client_ip", s.clientIP, "err", err)
			result, err = "error", errInternal
		}
		d := time.Since(start)
		metrics.MailboxCommand("imap", command, result, d)
		if s.srv.cfg.AccessLog || result == "error" {
			attrs := []any{"command", command, "result", result, "client_ip", s.clientIP, "duration_ms", float64(d.Microseconds()) / 1000}
			if s.ns != nil {
				attrs = append(attrs, "namespace", s.ns.Name)
			}
			slog.Info("IMAP command", attrs...)
		}
	}()
	return fn(ctx)
}

// The session's replies that are not go-imap's (RFC 5530 response codes).
var (
	errInternal  = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeServerBug, Text: "Internal error, try again later"}
	errTemporary = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Temporary failure, try again later"}
	errThrottled = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable, Text: "Too many failed logins from your address, try again later"}
	errNoMailbox = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeNonExistent, Text: "No such mailbox: this server has INBOX only"}
	errOnlyInbox = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot, Text: "This server has INBOX only"}
	errReadOnly  = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot, Text: "The mailbox is selected read-only (EXAMINE)"}
	errTryCreate = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeTryCreate, Text: "No such mailbox: this server has INBOX only"}
	errSameBox   = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot, Text: "Source and destination are the same mailbox"}
	errSASL      = &imap.Error{Type: imap.StatusResponseTypeBad, Text: "Malformed authentication response"}
)

// isInbox reports whether a mailbox name is INBOX (case-insensitive, RFC 9051
// section 5.1).
func isInbox(name string) bool { return strings.EqualFold(name, inboxName) }

// Login implements imapserver.Session: namespace and SMTP password.
func (s *session) Login(username, password string) error {
	return s.do("LOGIN", func(ctx context.Context) error { return s.login(ctx, "", username, password) })
}

func (s *session) login(ctx context.Context, identity, username, password string) error {
	ns, err := s.srv.auth.Check(ctx, s.client(), identity, username, password)
	switch {
	case errors.Is(err, mailauth.ErrThrottled):
		go s.imapConn.Bye("Too many failed logins from your address, try again later")
		return errThrottled
	case errors.Is(err, mailauth.ErrFailed):
		return imapserver.ErrAuthFailed
	case err != nil:
		return errTemporary
	}
	mb, err := s.srv.boxes.acquire(ctx, ns.ID)
	if err != nil {
		return err
	}
	s.ns, s.mb = &ns, mb
	if s.conn != nil {
		s.conn.authed.Store(true)
	}
	return nil
}

// client is the session's client for mailauth.
func (s *session) client() mailauth.Client {
	key := s.clientIP
	if s.conn != nil {
		key = s.conn.addrKey
	}
	return mailauth.Client{Protocol: "imap", IP: s.clientIP, AddrKey: key}
}

// AuthenticateMechanisms implements imapserver.SessionSASL.
func (s *session) AuthenticateMechanisms() []string {
	return []string{mailauth.MechPlain, mailauth.MechLogin}
}

// Authenticate implements imapserver.SessionSASL (RFC 9051 section 6.2.2).
func (s *session) Authenticate(mech string) (sasl.Server, error) {
	if s.srv.auth.Throttled(s.client()) {
		go s.imapConn.Bye("Too many failed logins from your address, try again later")
		return nil, errThrottled
	}
	srv := mailauth.NewServer(strings.ToUpper(mech), func(identity, username, password string) error {
		return s.do("AUTHENTICATE", func(ctx context.Context) error { return s.login(ctx, identity, username, password) })
	}, mailauth.SASLErrors{Malformed: errSASL, Unexpected: errSASL})
	if srv == nil {
		return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Text: "Unsupported authentication mechanism"}
	}
	return srv, nil
}

// AppendLimit implements imapserver.SessionAppendLimit: the SMTP message
// limit, announced as APPENDLIMIT (RFC 7889); a larger literal is refused
// before its continuation.
func (s *session) AppendLimit() uint32 { return uint32(s.srv.cfg.MaxMessageBytes) }

// Select implements imapserver.Session (SELECT and EXAMINE).
func (s *session) Select(mailbox string, options *imap.SelectOptions) (data *imap.SelectData, err error) {
	name := "SELECT"
	if options.ReadOnly {
		name = "EXAMINE"
	}
	err = s.do(name, func(ctx context.Context) error {
		s.unselect()
		if !isInbox(mailbox) {
			return errNoMailbox
		}
		if err := s.mb.refresh(ctx, 0); err != nil {
			return err
		}
		v := newView(s.mb, options.ReadOnly)
		s.viewMu.Lock()
		s.view = v
		s.viewMu.Unlock()
		snap := s.mb.snapshot()
		flags := []imap.Flag{imap.FlagSeen, imap.FlagAnswered, imap.FlagFlagged, imap.FlagDeleted, imap.FlagDraft}
		data = &imap.SelectData{
			Flags:          flags,
			PermanentFlags: flags,
			NumMessages:    uint32(len(s.view.uids)),
			UIDNext:        imap.UID(snap.uidNext),
			UIDValidity:    snap.uidValidity,
		}
		if options.ReadOnly {
			data.PermanentFlags = nil
		}
		for i, f := range s.view.flags {
			if f&inbox.FlagSeen == 0 {
				data.FirstUnseenSeqNum = uint32(i + 1)
				break
			}
		}
		return nil
	})
	return data, err
}

// Unselect implements imapserver.Session (UNSELECT, and CLOSE after its
// expunge).
func (s *session) Unselect() error {
	s.unselect()
	return nil
}

func (s *session) unselect() {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if s.view != nil {
		s.view.close()
		s.view = nil
	}
}

// Create, Delete, Rename: there is one mailbox, and it cannot go.
func (s *session) Create(string, *imap.CreateOptions) error { return errOnlyInbox }
func (s *session) Delete(string) error                      { return errOnlyInbox }
func (s *session) Rename(string, string, *imap.RenameOptions) error {
	return errOnlyInbox
}

// Subscribe and Unsubscribe implement imapserver.Session: INBOX is always
// subscribed.
func (s *session) Subscribe(mailbox string) error {
	if !isInbox(mailbox) {
		return errNoMailbox
	}
	return nil
}
func (s *session) Unsubscribe(mailbox string) error {
	if !isInbox(mailbox) {
		return errNoMailbox
	}
	return errOnlyInbox
}

// Namespace implements imapserver.SessionNamespace (RFC 2342): one personal
// namespace holding INBOX.
func (s *session) Namespace() (*imap.NamespaceData, error) {
	return &imap.NamespaceData{Personal: []imap.NamespaceDescriptor{{Prefix: "", Delim: '/'}}}, nil
}

// List implements imapserver.Session (LIST and LSUB).
func (s *session) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	return s.do("LIST", func(ctx context.Context) error {
		if len(patterns) == 1 && patterns[0] == "" {
			// The hierarchy delimiter and root (RFC 9051 section 6.3.9).
			return w.WriteList(&imap.ListData{Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}, Delim: '/'})
		}
		for _, p := range patterns {
			if imapserver.MatchList(inboxName, '/', ref, p) {
				data := &imap.ListData{Mailbox: inboxName, Delim: '/', Attrs: []imap.MailboxAttr{imap.MailboxAttrHasNoChildren}}
				if options.SelectSubscribed || options.ReturnSubscribed {
					data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
				}
				if options.ReturnStatus != nil {
					st, err := s.status(ctx, options.ReturnStatus)
					if err != nil {
						return err
					}
					data.Status = st
				}
				return w.WriteList(data)
			}
		}
		return nil
	})
}

// Status implements imapserver.Session.
func (s *session) Status(mailbox string, options *imap.StatusOptions) (data *imap.StatusData, err error) {
	err = s.do("STATUS", func(ctx context.Context) error {
		if !isInbox(mailbox) {
			return errNoMailbox
		}
		data, err = s.status(ctx, options)
		return err
	})
	return data, err
}

func (s *session) status(ctx context.Context, options *imap.StatusOptions) (*imap.StatusData, error) {
	if err := s.mb.refresh(ctx, 0); err != nil {
		return nil, err
	}
	snap := s.mb.snapshot()
	now := time.Now().UnixMilli()
	var n, unseen, deleted uint32
	var size int64
	for _, m := range snap.msgs {
		if m.ExpiresMs <= now {
			continue
		}
		n++
		if m.Flags&inbox.FlagSeen == 0 {
			unseen++
		}
		if m.Flags&inbox.FlagDeleted != 0 {
			deleted++
		}
		size += m.Size
	}
	data := &imap.StatusData{Mailbox: inboxName}
	if options.NumMessages {
		data.NumMessages = &n
	}
	if options.UIDNext {
		data.UIDNext = imap.UID(snap.uidNext)
	}
	if options.UIDValidity {
		data.UIDValidity = snap.uidValidity
	}
	if options.NumUnseen {
		data.NumUnseen = &unseen
	}
	if options.NumDeleted {
		data.NumDeleted = &deleted
	}
	if options.Size {
		data.Size = &size
	}
	if options.NumRecent {
		zero := uint32(0)
		data.NumRecent = &zero
	}
	return data, nil
}

// Append implements imapserver.Session: the message is stored in the
// namespace as if received over SMTP (docs/imap.md, "APPEND"), with the flags
// given; its INTERNALDATE is the time it was stored, whatever date the client
// gave.
func (s *session) Append(mailbox string, r imap.LiteralReader, options *imap.AppendOptions) (data *imap.AppendData, err error) {
	err = s.do("APPEND", func(ctx context.Context) error {
		raw, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if !isInbox(mailbox) {
			return errTryCreate
		}
		ids, err := s.srv.ingester.Deliver(ctx, raw, inbox.Envelope{ClientIP: s.clientIP}, []inbox.Target{{Namespace: *s.ns}})
		if err != nil {
			if errors.Is(err, inbox.ErrClosed) {
				return errTemporary
			}
			return err
		}
		if err := s.mb.sync(ctx, false); err != nil {
			return err
		}
		snap := s.mb.snapshot()
		for _, m := range snap.msgs {
			if m.EmailID != ids[0] {
				continue
			}
			if f := flagBits(options.Flags); f != 0 {
				if err := s.srv.searcher.StoreFlags(ctx, s.ns.ID, []uint32{m.UID}, inbox.FlagsSet, f); err != nil {
					return err
				}
				if err := s.mb.sync(ctx, false); err != nil {
					return err
				}
			}
			data = &imap.AppendData{UIDValidity: snap.uidValidity, UID: imap.UID(m.UID)}
			return nil
		}
		return nil // stored, but already gone (quota); no APPENDUID
	})
	return data, err
}

// Poll implements imapserver.Session: after each command, what changed. A
// command that allows EXPUNGE (NOOP among them, RFC 9051 section 6.1.2)
// brings the mailbox up to date first unless it was within the last tenth of
// a second, so a client polling with NOOP sees new mail at once.
func (s *session) Poll(w *imapserver.UpdateWriter, allowExpunge bool) error {
	if s.view == nil {
		return nil
	}
	if allowExpunge {
		ctx, cancel := context.WithTimeout(s.srv.ctx, storeTimeout)
		err := s.mb.refresh(ctx, 100*time.Millisecond)
		cancel()
		if err != nil {
			slog.Warn("Bringing an IMAP mailbox up to date failed", "namespace", s.ns.Name, "err", err)
		}
	}
	return s.view.update(w, allowExpunge)
}

// Idle implements imapserver.Session (RFC 2177): every change to the selected
// mailbox is written as it happens (EXISTS, EXPUNGE, FETCH FLAGS) until DONE.
func (s *session) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	metrics.MailboxIdle(1)
	defer metrics.MailboxIdle(-1)
	s.viewMu.Lock()
	v := s.view
	s.viewMu.Unlock()
	if v == nil {
		<-stop
		return nil
	}
	for {
		if err := v.update(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-v.updates:
		}
	}
}

// Expunge implements imapserver.Session (EXPUNGE, UID EXPUNGE and CLOSE):
// the messages flagged \Deleted (of uids, when given) are deleted as the
// API's DELETE deletes, for every client and replica.
func (s *session) Expunge(w *imapserver.ExpungeWriter, uids *imap.UIDSet) error {
	return s.do("EXPUNGE", func(ctx context.Context) error {
		if s.view.readOnly {
			return errReadOnly
		}
		var ids []string
		for _, t := range s.view.resolve(imap.UIDSet{imap.UIDRange{Start: 1, Stop: 0}}) {
			if t.msg.Flags&inbox.FlagDeleted != 0 && (uids == nil || uids.Contains(imap.UID(t.msg.UID))) {
				ids = append(ids, t.msg.EmailID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := s.srv.searcher.DeleteEmails(ctx, s.ns.ID, ids); err != nil {
			return err
		}
		if err := s.mb.sync(ctx, false); err != nil {
			return err
		}
		return s.view.update(expungeOnly{w}, true)
	})
}

// expungeOnly writes the EXPUNGE responses of an update to a command's own
// writer, leaving the rest for Poll.
type expungeOnly struct{ w *imapserver.ExpungeWriter }

func (e expungeOnly) WriteExpunge(seq uint32) error                         { return e.w.WriteExpunge(seq) }
func (e expungeOnly) WriteNumMessages(uint32) error                         { return nil }
func (e expungeOnly) WriteMessageFlags(uint32, imap.UID, []imap.Flag) error { return nil }

// Copy implements imapserver.Session: there is no other mailbox to copy to.
func (s *session) Copy(numSet imap.NumSet, dest string) (*imap.CopyData, error) {
	if isInbox(dest) {
		return nil, errSameBox
	}
	return nil, errTryCreate
}

// Move implements imapserver.SessionMove: as Copy.
func (s *session) Move(w *imapserver.MoveWriter, numSet imap.NumSet, dest string) error {
	if isInbox(dest) {
		return errSameBox
	}
	return errTryCreate
}

// Store implements imapserver.Session (STORE and UID STORE): \Seen,
// \Answered, \Flagged, \Deleted and \Draft are kept per namespace; keywords
// are accepted and not kept (PERMANENTFLAGS has no \*).
func (s *session) Store(w *imapserver.FetchWriter, numSet imap.NumSet, flags *imap.StoreFlags, options *imap.StoreOptions) error {
	return s.do("STORE", func(ctx context.Context) error {
		if s.view.readOnly {
			return errReadOnly
		}
		targets := s.view.resolve(numSet)
		uids := make([]uint32, len(targets))
		for i, t := range targets {
			uids[i] = t.msg.UID
		}
		op := map[imap.StoreFlagsOp]inbox.FlagOp{imap.StoreFlagsSet: inbox.FlagsSet, imap.StoreFlagsAdd: inbox.FlagsAdd, imap.StoreFlagsDel: inbox.FlagsRemove}[flags.Op]
		if err := s.srv.searcher.StoreFlags(ctx, s.ns.ID, uids, op, flagBits(flags.Flags)); err != nil {
			return err
		}
		if err := s.mb.sync(ctx, false); err != nil {
			return err
		}
		snap := s.mb.snapshot()
		for _, t := range targets {
			m, ok := snap.find(t.msg.UID)
			if !ok {
				continue
			}
			if i := t.seq - 1; int(i) < len(s.view.uids) && s.view.uids[i] == m.UID {
				s.view.flags[i] = m.Flags // told here, or not to be told (.SILENT)
			}
			if flags.Silent {
				continue
			}
			rw := w.CreateMessage(t.seq)
			rw.WriteUID(imap.UID(m.UID))
			rw.WriteFlags(flagList(m.Flags))
			if err := rw.Close(); err != nil {
				return err
			}
		}
		return nil
	})
}

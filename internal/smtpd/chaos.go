package smtpd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Faults decides what a namespace's fault rules do to a command
// (internal/chaos.Table). Has must cost no store access, so that a namespace
// without rules adds nothing to a transaction.
type Faults interface {
	// Has reports whether the namespace has a rule at the stage.
	Has(namespaceID string, stage chaos.Stage) bool
	// Fire returns the fault of the first rule of the stage that fires for
	// a message to (at the mail stage: from) addrs.
	Fire(ctx context.Context, namespaceID string, stage chaos.Stage, addrs ...string) (chaos.Fault, bool)
}

// faultText is the text of a rule's reply that gives none.
const faultText = "Fault injected by a chaos rule"

// errDropped ends a command whose fault closed the connection: go-smtp's
// write of it fails, and its next read ends the connection.
var errDropped = fmt.Errorf("smtpd: connection dropped by a chaos rule: %w", io.ErrClosedPipe)

// fault asks the namespace's rules about a command at stage, and counts a
// fault that fires in the metrics; the caller adds it to the transaction's
// log line (faultName).
func (s *session) fault(ns tenant.Namespace, stage chaos.Stage, addrs ...string) (chaos.Fault, bool) {
	f := s.srv.cfg.Faults
	if f == nil || !f.Has(ns.ID, stage) {
		return chaos.Fault{}, false
	}
	ctx, cancel := context.WithTimeout(s.srv.ctx, storeTimeout)
	defer cancel()
	fault, ok := f.Fire(ctx, ns.ID, stage, addrs...)
	if ok {
		metrics.SMTPFault(string(stage), fault.Action())
	}
	return fault, ok
}

// faultName names a fault in the transaction's log line:
// "flaky rcpt rules[0] reply 451".
func faultName(ns tenant.Namespace, f chaos.Fault) string { return ns.Name + " " + f.String() }

// act carries out a fault in a command's reply: the delay, then the reply,
// returned for go-smtp to write, and the disconnect after it. A fault that
// is a delay alone returns nil: the command goes on as usual.
func (s *session) act(f chaos.Fault) error {
	s.pause(f.Delay)
	switch {
	case f.Disconnect && f.Reply == nil:
		s.drop()
		return errDropped
	case f.Disconnect && s.conn != nil:
		s.conn.closeNext = true
	}
	if f.Reply != nil {
		return faultReply(f.Reply)
	}
	return nil
}

// pause waits out a rule's delay; shutdown cuts it short.
func (s *session) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.srv.ctx.Done():
	}
}

// drop closes the connection at once, with no reply.
func (s *session) drop() {
	if s.conn != nil {
		s.conn.Close()
		return
	}
	s.smtpConn.Close()
}

// faultReply is a rule's reply as go-smtp writes it. Without an enhanced
// code go-smtp sends the class's X.0.0, as ENHANCEDSTATUSCODES asks (RFC
// 2034 section 3).
func faultReply(r *chaos.Reply) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: r.Text}
	if r.HasEnhanced() {
		e.EnhancedCode = smtp.EnhancedCode(r.Enhanced)
	}
	if e.Message == "" {
		e.Message = faultText
	}
	return e
}

// faultLine is the reply line go-smtp would write for faultReply(r).
func faultLine(r *chaos.Reply) string {
	e := faultReply(r)
	enh := e.EnhancedCode
	if enh == smtp.EnhancedCodeNotSet {
		enh = smtp.EnhancedCode{r.Code / 100, 0, 0}
	}
	return fmt.Sprintf("%d %d.%d.%d %s\r\n", e.Code, enh[0], enh[1], enh[2], e.Message)
}

// dataFault asks the rules of the transaction's namespaces about its DATA
// (stage data) or its message (after_data), namespace by namespace in the
// order of their first recipients: the first that fires decides. It returns
// the fault's name for the log line.
func (s *session) dataFault(stage chaos.Stage, targets []inbox.Target) (chaos.Fault, string, bool) {
	if s.srv.cfg.Faults == nil {
		return chaos.Fault{}, "", false
	}
	for _, t := range targets {
		if fault, ok := s.fault(t.Namespace, stage, t.Recipients...); ok {
			return fault, faultName(t.Namespace, fault), true
		}
	}
	return chaos.Fault{}, "", false
}

// beforeData applies the data stage's rules when go-smtp is about to write
// the 354 that answers DATA: go-smtp calls no session method between reading
// DATA and writing its 354, so the connection's Write (conn.Write) calls this
// on seeing that reply, on a connection whose replies it sees in plain text.
// It returns true when it wrote the rule's reply instead of the 354 (or
// closed the connection): the conn then swallows the 354, feeds go-smtp's
// reader of message data an empty message, and swallows the reply go-smtp
// writes after Data. A delay alone is waited out and the 354 written.
func (s *session) beforeData(c *conn) bool {
	s.dataChecked.Store(true)
	fault, name, ok := s.dataFault(chaos.StageData, s.targets)
	if !ok {
		return false
	}
	s.faults = append(s.faults, name)
	s.pause(fault.Delay)
	if fault.Reply == nil && !fault.Disconnect {
		c.Conn.SetWriteDeadline(time.Now().Add(s.srv.cfg.IdleTimeout))
		return false
	}
	s.refusedData.Store(&fault)
	if fault.Reply != nil {
		c.Conn.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		io.WriteString(c.Conn, faultLine(fault.Reply))
	}
	switch {
	case fault.Disconnect && fault.Reply == nil:
		c.Close()
	case fault.Disconnect:
		c.lingerClose()
	default:
		c.injectEnd, c.dropReply = true, true
	}
	return true
}

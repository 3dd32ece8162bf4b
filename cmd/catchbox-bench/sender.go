package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// smtpTimeout bounds every SMTP command and every wait for the reply after
// DATA, so a wedged server fails the run instead of hanging it.
const smtpTimeout = 30 * time.Second

// sender is one persistent SMTP connection that sends one transaction per
// message (MAIL, RCPT, DATA) without RSET between successful transactions,
// which is how a busy application or relay feeds a mail catcher.
type sender struct {
	addr string
	auth string // "user:pass", or empty for no AUTH
	c    *smtp.Client
	sent int // messages accepted on the current connection
}

// connect dials, says EHLO and authenticates when credentials are set.
func (s *sender) connect() error {
	conn, err := net.DialTimeout("tcp", s.addr, smtpTimeout)
	if err != nil {
		return fmt.Errorf("dial %s: %w", s.addr, err)
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout = smtpTimeout
	c.SubmissionTimeout = smtpTimeout
	if err := c.Hello("bench.localhost"); err != nil {
		c.Close()
		return fmt.Errorf("ehlo: %w", err)
	}
	if s.auth != "" {
		user, pass, ok := strings.Cut(s.auth, ":")
		if !ok {
			c.Close()
			return errors.New("auth must be user:pass")
		}
		if err := c.Auth(sasl.NewPlainClient("", user, pass)); err != nil {
			c.Close()
			return fmt.Errorf("auth: %w", err)
		}
	}
	s.c = c
	s.sent = 0
	return nil
}

// send runs one transaction and returns the time from MAIL FROM to the reply
// after the final dot. A refused transaction leaves the connection usable (it
// is reset); a broken connection is dropped and redialled on the next send.
func (s *sender) send(from string, to []string, msg []byte) (time.Duration, error) {
	if s.c == nil {
		if err := s.connect(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	err := s.transaction(from, to, msg)
	elapsed := time.Since(start)
	if err == nil {
		s.sent++
	}
	if err != nil {
		var smtpErr *smtp.SMTPError
		if errors.As(err, &smtpErr) && s.c.Reset() == nil {
			return elapsed, err
		}
		s.close()
	}
	return elapsed, err
}

func (s *sender) transaction(from string, to []string, msg []byte) error {
	if err := s.c.Mail(from, nil); err != nil {
		return fmt.Errorf("mail from: %w", err)
	}
	for _, rcpt := range to {
		if err := s.c.Rcpt(rcpt, nil); err != nil {
			return fmt.Errorf("rcpt to %s: %w", rcpt, err)
		}
	}
	w, err := s.c.Data()
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		w.Close()
		return fmt.Errorf("data write: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("end of data: %w", err)
	}
	return nil
}

// close ends the session politely when the connection still works.
func (s *sender) close() {
	if s.c == nil {
		return
	}
	_ = s.c.Quit()
	_ = s.c.Close()
	s.c = nil
}

// Package relaytest is an SMTP relay for tests of outbound delivery: a real
// go-smtp server on a loopback port that requires AUTH PLAIN, answers each
// RCPT as the test says for that address, and records every message it
// accepted with its envelope, so that a test can prove what was sent and how
// often.
//
// By default it answers by the address's local part, so that end-to-end
// tests can choose an outcome without configuring the relay: one starting
// with "defer" is 451 4.2.0, one starting with "bounce" is 550 5.1.1, any
// other 250.
package relaytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the relay accepted.
type Message struct {
	From string
	To   []string // the recipients it accepted
	Data []byte
	// QueueID is the id its 250 to the data named ("queued as <id>").
	QueueID string
	// At is when the relay accepted it, just before its 250.
	At time.Time
}

// Server is a running relay.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr               string
	Username, Password string
	// RootCAs trusts the relay's certificate (TLS modes only).
	RootCAs *x509.CertPool
	mode    string // none, starttls or tls

	srv *smtp.Server
	ln  net.Listener
	seq atomic.Int64

	mu        sync.Mutex
	rcpt      map[string]*smtp.SMTPError // by lower-case address: the reply to its RCPT
	data      *smtp.SMTPError            // the reply to the data, nil: 250
	received  []Message
	rcpts     map[string]int // RCPTs seen per address, accepted or not
	authFails int
	rcptDelay time.Duration
	gate      chan struct{} // RCPTs wait for it to close; nil: none
	notify    func(Message)
}

// Start starts a relay on 127.0.0.1 with the credentials; Close stops it.
func Start(username, password string) (*Server, error) {
	return StartOn("127.0.0.1:0", username, password)
}

// StartOn is Start on the address addr.
func StartOn(addr, username, password string) (*Server, error) {
	return start(addr, username, password, "none")
}

// StartTLS starts a relay on 127.0.0.1 that speaks TLS: "starttls" offers
// STARTTLS (RFC 3207), "tls" is TLS from the first byte (RFC 8314). Its
// certificate is self-signed for 127.0.0.1, trusted by RootCAs; AUTH is
// refused before TLS.
func StartTLS(username, password, mode string) (*Server, error) {
	return start("127.0.0.1:0", username, password, mode)
}

func start(addr, username, password, mode string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), Username: username, Password: password, ln: ln, mode: mode,
		rcpt: map[string]*smtp.SMTPError{}, rcpts: map[string]int{}}
	s.srv = smtp.NewServer(backend{s})
	s.srv.Domain = "relay.test"
	s.srv.AllowInsecureAuth = mode == "none"
	if mode != "none" {
		cert, pool, err := selfSigned()
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.RootCAs = pool
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if mode == "tls" {
			s.ln = tls.NewListener(ln, cfg)
			ln = s.ln
		} else {
			s.srv.TLSConfig = cfg
		}
	}
	s.srv.ReadTimeout, s.srv.WriteTimeout = time.Minute, time.Minute
	s.srv.MaxMessageBytes = 64 << 20
	s.srv.EnableSMTPUTF8 = true
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the CATCHBOX_RELAY_URL of the relay.
func (s *Server) URL() string {
	return fmt.Sprintf("smtp://%s:%s@%s?tls=%s", s.Username, s.Password, s.Addr, s.mode)
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relaytest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}

// Close stops the relay. The listener is closed here too: Serve may not
// have taken it yet when Close comes right after Start.
func (s *Server) Close() error {
	s.ln.Close()
	return s.srv.Close()
}

// Reply sets the reply to RCPT TO of addr: code and enhanced code and text
// (code 250 accepts it).
func (s *Server) Reply(addr string, code int, enhanced smtp.EnhancedCode, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcpt[strings.ToLower(addr)] = &smtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: text}
}

// DataReply sets the reply to the end of the data; code 0 restores 250.
func (s *Server) DataReply(code int, enhanced smtp.EnhancedCode, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == 0 {
		s.data = nil
		return
	}
	s.data = &smtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: text}
}

// RcptDelay makes the relay wait d before it answers each RCPT, so that a
// test can stop its client in the middle of a transaction.
func (s *Server) RcptDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptDelay = d
}

// HoldRcpt makes every RCPT from now on wait until release is called, so
// that a test can act while an attempt is in the middle of its transaction.
func (s *Server) HoldRcpt() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()
			close(gate)
		})
	}
}

// Notify calls fn with each message the relay accepts, before its 250, on
// the session's goroutine and under the relay's lock: fn must not call the
// relay's methods.
func (s *Server) Notify(fn func(Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = fn
}

// Received returns the messages accepted so far, oldest first.
func (s *Server) Received() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// Delivered counts how many accepted messages named addr as a recipient.
func (s *Server) Delivered(addr string) int {
	n := 0
	for _, m := range s.Received() {
		for _, to := range m.To {
			if strings.EqualFold(to, addr) {
				n++
			}
		}
	}
	return n
}

// Rcpts counts the RCPT TO commands naming addr, whatever their reply.
func (s *Server) Rcpts(addr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rcpts[strings.ToLower(addr)]
}

// AuthFailures counts the failed AUTH attempts.
func (s *Server) AuthFailures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authFails
}

// replyFor is the reply to RCPT TO of addr: the one set, or the default by
// its local part.
func (s *Server) replyFor(addr string) *smtp.SMTPError {
	s.mu.Lock()
	defer s.mu.Unlock()
	addr = strings.ToLower(addr)
	s.rcpts[addr]++
	if d := s.rcptDelay; d > 0 {
		s.mu.Unlock()
		time.Sleep(d)
		s.mu.Lock()
	}
	if gate := s.gate; gate != nil {
		s.mu.Unlock()
		<-gate
		s.mu.Lock()
	}
	if r, ok := s.rcpt[addr]; ok {
		return r
	}
	switch {
	case strings.HasPrefix(addr, "defer"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "Mailbox busy, try again later"}
	case strings.HasPrefix(addr, "bounce"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "User unknown"}
	}
	return nil
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s      *Server
	authed bool
	from   string
	to     []string
}

func (se *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != se.s.Username || password != se.s.Password {
			se.s.mu.Lock()
			se.s.authFails++
			se.s.mu.Unlock()
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		se.authed = true
		return nil
	}), nil
}

var errAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if !se.authed {
		return errAuthRequired
	}
	se.from = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !se.authed {
		return errAuthRequired
	}
	if r := se.s.replyFor(to); r != nil && r.Code != 250 {
		return r
	}
	se.to = append(se.to, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	se.s.mu.Lock()
	defer se.s.mu.Unlock()
	if se.s.data != nil {
		return se.s.data
	}
	id := fmt.Sprintf("RLY%06d", se.s.seq.Add(1))
	m := Message{From: se.from, To: append([]string(nil), se.to...), Data: data, QueueID: id, At: time.Now()}
	se.s.received = append(se.s.received, m)
	if se.s.notify != nil {
		se.s.notify(m)
	}
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "OK: queued as " + id}
}

func (se *session) Reset() { se.from, se.to = "", nil }

func (se *session) Logout() error { return nil }

package mailauth

import (
	"bytes"

	"github.com/emersion/go-sasl"
)

// Authentication mechanisms offered by every mail listener. Both carry the
// password in the clear, which is why CATCHBOX_SMTP_REQUIRE_TLS exists.
const (
	MechPlain = sasl.Plain
	MechLogin = sasl.Login
)

// CheckFunc verifies a username and password; identity is the PLAIN
// authorisation identity ("" when absent).
type CheckFunc func(identity, username, password string) error

// SASLErrors are what a listener answers to a malformed exchange, in its own
// protocol's words.
type SASLErrors struct {
	Malformed  error // a response that is not what the mechanism expects
	Unexpected error // a response after the exchange ended
}

// NewServer returns the server side of mech (MechPlain or MechLogin, in upper
// case), or nil for another mechanism.
func NewServer(mech string, check CheckFunc, errs SASLErrors) sasl.Server {
	switch mech {
	case MechPlain:
		return &plainServer{check: check, errs: errs}
	case MechLogin:
		return &loginServer{check: check, errs: errs}
	}
	return nil
}

// plainServer is the server side of PLAIN (RFC 4616), written here so that a
// malformed response gets a reply of the listener's rather than a library's
// text.
type plainServer struct {
	check CheckFunc
	errs  SASLErrors
	done  bool
}

// Next implements sasl.Server.
func (p *plainServer) Next(response []byte) (challenge []byte, done bool, err error) {
	if p.done {
		return nil, true, p.errs.Unexpected
	}
	if response == nil {
		// No initial response: ask for it with an empty challenge.
		return []byte{}, false, nil
	}
	p.done = true
	parts := bytes.Split(response, []byte{0})
	if len(parts) != 3 {
		return nil, true, p.errs.Malformed
	}
	return nil, true, p.check(string(parts[0]), string(parts[1]), string(parts[2]))
}

// loginServer is the server side of LOGIN (draft-murchison-sasl-login), which
// go-sasl offers only as a client. The username may come as the initial
// response; the challenges are the customary "Username:" and "Password:",
// which clients such as go-sasl's compare literally.
type loginServer struct {
	check    CheckFunc
	errs     SASLErrors
	username []byte
	step     int
}

// Next implements sasl.Server.
func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		l.step = 1
		if response == nil {
			return []byte("Username:"), false, nil
		}
		l.username = response
		l.step = 2
		return []byte("Password:"), false, nil
	case 1:
		l.username = response
		l.step = 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.check("", string(l.username), string(response))
	default:
		return nil, true, l.errs.Unexpected
	}
}

package smtpd

import (
	"bytes"

	"github.com/emersion/go-sasl"
)

// Authentication mechanisms offered (RFC 4954). Both carry the password in the
// clear, which is why RequireTLS exists.
const (
	mechPlain = sasl.Plain
	mechLogin = sasl.Login
)

// checkFunc verifies a username and password; identity is the PLAIN
// authorisation identity ("" when absent).
type checkFunc func(identity, username, password string) error

// plainServer is the server side of PLAIN (RFC 4616), written here so that a
// malformed response gets an SMTP reply of ours rather than a library's text.
type plainServer struct {
	check checkFunc
	done  bool
}

// Next implements sasl.Server.
func (p *plainServer) Next(response []byte) (challenge []byte, done bool, err error) {
	if p.done {
		return nil, true, errAuthUnexpected
	}
	if response == nil {
		// No initial response: ask for it with an empty challenge.
		return []byte{}, false, nil
	}
	p.done = true
	parts := bytes.Split(response, []byte{0})
	if len(parts) != 3 {
		return nil, true, errAuthMalformed
	}
	return nil, true, p.check(string(parts[0]), string(parts[1]), string(parts[2]))
}

// loginServer is the server side of LOGIN (draft-murchison-sasl-login), which
// go-sasl offers only as a client. The username may come as the initial
// response; the challenges are the customary "Username:" and "Password:",
// which clients such as go-sasl's compare literally.
type loginServer struct {
	check    checkFunc
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
		return nil, true, errAuthUnexpected
	}
}

package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// TLS modes of the relay connection.
const (
	RelayStartTLS = "starttls" // plain connection upgraded by STARTTLS (RFC 3207), required
	RelayTLS      = "tls"      // TLS from the first byte (implicit TLS, RFC 8314)
	RelayNoTLS    = "none"     // no TLS at all: only for a relay on a trusted network
)

// Relay is the parsed CATCHBOX_RELAY_URL: where outbound mail to external
// recipients is handed over, and how. Its String never shows the password.
type Relay struct {
	Host     string // host name or address, without brackets
	Port     int
	Username string // "" for no AUTH
	Password string
	TLS      string // RelayStartTLS, RelayTLS or RelayNoTLS
}

// Addr is host:port, for dialling.
func (r Relay) Addr() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// String describes the relay for logs and errors, without its password.
func (r Relay) String() string {
	u := url.URL{Scheme: "smtp", Host: r.Addr(), RawQuery: "tls=" + r.TLS}
	if r.Username != "" {
		u.User = url.User(r.Username)
	}
	return u.String()
}

// Relay parses RelayURL: nil when none is set. Its errors name what is wrong
// without repeating the URL, which holds a password.
func (c *Serve) Relay() (*Relay, error) {
	return ParseRelayURL(c.RelayURL)
}

// ParseRelayURL parses smtp://user:pass@host:port?tls=starttls|tls|none; ""
// is no relay (nil). The port defaults to 587 for starttls, 465 for tls and 25
// for none; tls defaults to starttls. User and password are percent-decoded
// and go together: AUTH PLAIN needs both.
func ParseRelayURL(s string) (*Relay, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	const name = "--relay-url"
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL of the form smtp://user:pass@host:port?tls=starttls|tls|none", name)
	}
	if u.Scheme != "smtp" {
		return nil, fmt.Errorf("%s: the scheme must be smtp, not %q", name, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%s: a host is required", name)
	}
	if u.Path != "" && u.Path != "/" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%s: nothing may follow host:port but ?tls=", name)
	}
	r := &Relay{Host: u.Hostname(), TLS: RelayStartTLS}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return nil, fmt.Errorf("%s: unknown parameter %q (only tls=starttls|tls|none)", name, k)
		}
	}
	if v := q.Get("tls"); v != "" {
		switch v {
		case RelayStartTLS, RelayTLS, RelayNoTLS:
			r.TLS = v
		default:
			return nil, fmt.Errorf("%s: tls must be starttls, tls or none, not %q", name, v)
		}
	}
	switch r.TLS {
	case RelayStartTLS:
		r.Port = 587
	case RelayTLS:
		r.Port = 465
	default:
		r.Port = 25
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s: the port must be 1 to 65535", name)
		}
		r.Port = n
	}
	if u.User != nil {
		r.Username = u.User.Username()
		r.Password, _ = u.User.Password()
		if r.Username == "" || r.Password == "" {
			return nil, fmt.Errorf("%s: give both a user and a password, or neither", name)
		}
	}
	return r, nil
}

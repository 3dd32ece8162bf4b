package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Mode holds the one rule that separates a service only its own machine can
// reach (local mode) from one others can reach (server mode). Local mode
// catches mail to any recipient, allows outgoing fetches to private targets
// and prints a one-time sign-in link at every start; server mode turns all
// three off. Each has its own setting that overrides the mode's default.
type Mode struct {
	Mode                string `name:"mode" env:"CATCHBOX_MODE" enum:"local,server," default:"" help:"local or server (default: local when the HTTP listener is on loopback and no public URL is set, else server). Local mode catches mail to any recipient, allows private outgoing targets and prints a sign-in link at start."`
	CatchAll            string `name:"catch-all" env:"CATCHBOX_CATCH_ALL" help:"Namespace that receives mail whose recipient names no namespace; none turns it off (default: default in local mode, none in server mode)."`
	AllowPrivateTargets string `name:"allow-private-targets" aliases:"webhook-allow-private" env:"CATCHBOX_ALLOW_PRIVATE_TARGETS,CATCHBOX_WEBHOOK_ALLOW_PRIVATE" help:"Allow outgoing fetches (webhooks, link checks) to loopback, private, link-local and other non-public addresses: true or false (default: true in local mode, false in server mode)."`
}

// Local and Server are the values of CATCHBOX_MODE.
const (
	Local  = "local"
	Server = "server"
)

// validate checks the mode's settings.
func (m *Mode) validate() error {
	if m.AllowPrivateTargets != "" {
		if _, err := strconv.ParseBool(m.AllowPrivateTargets); err != nil {
			return invalid(fmt.Sprintf("must be true or false, not %q", m.AllowPrivateTargets), "allow-private-targets")
		}
	}
	m.CatchAll = strings.ToLower(strings.TrimSpace(m.CatchAll))
	return nil
}

// EffectiveMode is local or server: as configured, else local when the HTTP
// listener is on loopback and no public URL is set.
func (c *Serve) EffectiveMode() string {
	if c.Mode.Mode != "" {
		return c.Mode.Mode
	}
	if c.PublicURL == "" && loopbackListener(c.HTTPAddr) {
		return Local
	}
	return Server
}

// IsLocal reports whether the service runs in local mode.
func (c *Serve) IsLocal() bool { return c.EffectiveMode() == Local }

// AllowPrivate reports whether outgoing fetches (webhooks, link checks) may
// reach loopback, private and other non-public addresses: as configured, else
// only in local mode.
func (c *Serve) AllowPrivate() bool {
	if c.AllowPrivateTargets != "" {
		b, _ := strconv.ParseBool(c.AllowPrivateTargets)
		return b
	}
	return c.IsLocal()
}

// CatchAllNamespace is the namespace that receives mail whose recipient names
// no namespace, "" when there is none: as configured ("none" or "off" for
// none), else "default" in local mode.
func (c *Serve) CatchAllNamespace() string {
	switch c.CatchAll {
	case "none", "off", "false":
		return ""
	case "":
		if c.IsLocal() {
			return "default"
		}
		return ""
	}
	return c.CatchAll
}

// loopbackListener reports whether a listen address is on loopback only
// (127.0.0.0/8, ::1 or localhost).
func loopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

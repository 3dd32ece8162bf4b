package main

import (
	"fmt"
	"os"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/tenant"
)

// signinLinkCmd is catchbox admin signin-link: a one-time link that signs a
// browser in to the dashboard as a user, in any mode (a local-mode start
// prints one for the default organisation's owner by itself). The link works
// once, within tenant.SignInLinkTTL; its base is the server's public URL, as
// serve computes it from the same settings.
type signinLinkCmd struct {
	User      string `name:"user" required:"" placeholder:"EMAIL" help:"The user to sign in as (owner@localhost is the default organisation's owner, made on the first start)."`
	PublicURL string `name:"public-url" env:"CATCHBOX_PUBLIC_URL" help:"Base URL of the server (default: http:// + the HTTP address)."`
	HTTPAddr  string `name:"http-addr" env:"CATCHBOX_HTTP_ADDR" default:"127.0.0.1:8025" help:"The server's HTTP listen address, the base of the link without a public URL."`
}

func (c *signinLinkCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	u, err := env.tenants.UserByEmail(env.ctx, c.User)
	if err != nil {
		return fmt.Errorf("user %s: %w", c.User, err)
	}
	token, expires, err := env.tenants.CreateSignInLink(env.ctx, u.ID, time.Now())
	if err != nil {
		return err
	}
	base := (&config.Serve{HTTPAddr: c.HTTPAddr, PublicURL: c.PublicURL}).PublicBaseURL()
	link := base + server.SignInPath(token)
	if env.json {
		env.print(map[string]string{"url": link, "user": u.Email, "expires_at": expires.UTC().Format("2006-01-02T15:04:05.000Z")}, "")
		return nil
	}
	fmt.Fprintln(env.out, link)
	fmt.Fprintf(os.Stderr, "Signs a browser in as %s; works once, until %s (%d minutes).\n", u.Email,
		expires.UTC().Format(time.RFC3339), int(tenant.SignInLinkTTL.Minutes()))
	return nil
}

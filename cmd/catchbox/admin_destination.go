package main

import (
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"github.com/catchbox/catchbox/internal/outbound/destinations"
)

// destinationCmd is `catchbox admin destination add|list|remove` (contract
// section 3): the external addresses an organisation may send to. An
// operator's destination is verified at once, with no mail.
type destinationCmd struct {
	Add    destinationAddCmd    `cmd:"" help:"Add a verified destination to an organisation."`
	List   destinationListCmd   `cmd:"" help:"List an organisation's destinations."`
	Remove destinationRemoveCmd `cmd:"" help:"Remove a destination from an organisation."`
}

type destinationAddCmd struct {
	Email string `arg:"" help:"External email address."`
	Org   string `name:"org" required:"" help:"Organisation name."`
}

// bareAddress checks an address given on the command line.
func bareAddress(v string) (string, error) {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || strings.Contains(v, "<") {
		return "", fmt.Errorf("%q is not a bare email address", v)
	}
	return a.Address, nil
}

func (c *destinationAddCmd) Run(a *adminCmd) error {
	addr, err := bareAddress(c.Email)
	if err != nil {
		return err
	}
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	d, created, err := destinations.NewStore(env.db).AddVerified(env.ctx, o.ID, addr)
	if err != nil {
		return err
	}
	verb := "Added"
	if !created {
		verb = "Verified"
	}
	env.print(d, "%s destination %s (id %s) for organisation %s", verb, d.Address, d.ID, o.Name)
	return nil
}

type destinationListCmd struct {
	Org string `name:"org" required:"" help:"Organisation name."`
}

func (c *destinationListCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	ds, err := destinations.NewStore(env.db).List(env.ctx, o.ID)
	if err != nil {
		return err
	}
	if env.json {
		if ds == nil {
			ds = []destinations.Destination{}
		}
		env.print(struct {
			Data []destinations.Destination `json:"data"`
		}{ds}, "")
		return nil
	}
	if len(ds) == 0 {
		fmt.Fprintf(env.out, "Organisation %s has no destinations\n", o.Name)
	}
	for _, d := range ds {
		status := "pending"
		if d.Verified() {
			status = "verified " + d.VerifiedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(env.out, "%s\t%s\t%s\n", d.ID, d.Address, status)
	}
	return nil
}

type destinationRemoveCmd struct {
	Email string `arg:"" help:"External email address."`
	Org   string `name:"org" required:"" help:"Organisation name."`
}

func (c *destinationRemoveCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	err = destinations.NewStore(env.db).RemoveAddress(env.ctx, o.ID, c.Email)
	if errors.Is(err, destinations.ErrNotFound) {
		return fmt.Errorf("organisation %s has no destination %s", o.Name, c.Email)
	}
	if err != nil {
		return err
	}
	env.print(struct {
		Email   string `json:"email"`
		Removed bool   `json:"removed"`
	}{strings.ToLower(c.Email), true}, "Removed destination %s from organisation %s", strings.ToLower(c.Email), o.Name)
	return nil
}

package main

import (
	"errors"
	"fmt"

	"github.com/catchbox/catchbox/internal/tenant"
)

// namespaceShareCmd is `catchbox admin namespace share NAME --with ORG` (contract
// section 3): the second organisation may then read the namespace (search,
// latest, emails, attachments, raw source), but not change its settings nor get
// its SMTP credentials. --stop ends the share. It acts as the namespace's
// owner, through the operation its users would call (tenant.ShareNamespaceFor).
type namespaceShareCmd struct {
	Name string `arg:"" help:"Namespace name."`
	With string `name:"with" help:"Organisation to share the namespace with (replaces any earlier share)."`
	Stop bool   `name:"stop" help:"Stop sharing the namespace."`
}

func (c *namespaceShareCmd) Run(a *adminCmd) error {
	if (c.With == "") == !c.Stop {
		return errors.New("give either --with ORG or --stop")
	}
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	n, err := env.tenants.NamespaceByName(env.ctx, c.Name)
	if err != nil {
		return fmt.Errorf("namespace %q: %w", c.Name, err)
	}
	owner, err := env.tenants.OrgByID(env.ctx, n.OrgID)
	if err != nil {
		return err
	}
	orgID, orgName := "", ""
	if c.With != "" {
		o, err := env.tenants.OrgByName(env.ctx, c.With)
		if err != nil {
			return err
		}
		orgID, orgName = o.ID, o.Name
	}
	n, err = env.tenants.ShareNamespaceFor(env.ctx, actAs(owner), tenant.ShareNamespaceRequest{Name: n.Name, With: orgID})
	if err != nil {
		return asArgument(err)
	}
	out := map[string]any{"id": n.ID, "namespace": n.Name, "shared": orgID != ""}
	if orgID == "" {
		env.print(out, "Namespace %s is no longer shared", n.Name)
		return nil
	}
	out["shared_organisation_id"] = orgID
	env.print(out, "Shared namespace %s with organisation %s (id %s): it may read the namespace's mail, not change it",
		n.Name, orgName, orgID)
	return nil
}

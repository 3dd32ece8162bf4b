package main

import (
	"fmt"
	"strings"

	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/webhook"
)

// webhookCmd is `catchbox admin webhook add|list|remove` (contract section
// 3). The operator is trusted: add accepts URLs on private addresses, which
// the running server still refuses to connect to unless
// CATCHBOX_ALLOW_PRIVATE_TARGETS (or local mode) allows them. add and remove
// act as the endpoint's organisation, through the operations its API keys
// call (webhook.CreateEndpoint, DeleteEndpoint).
type webhookCmd struct {
	Add    webhookAddCmd    `cmd:"" help:"Add a webhook endpoint to an organisation; its secret is printed once."`
	List   webhookListCmd   `cmd:"" help:"List webhook endpoints, of one organisation or all (never their secrets)."`
	Remove webhookRemoveCmd `cmd:"" help:"Remove a webhook endpoint by id, with its pending messages and log."`
}

// webhooks builds the webhook service on the admin command's store. Its
// queue only writes jobs of the one kind it knows (an endpoint enabled again
// gets its delivery job); the running server runs them.
func (e *adminEnv) webhooks() *webhook.Service {
	q := jobs.New(e.db, nil, jobs.Options{})
	w := webhook.New(e.db, q, e.tenants, e.key, nil, webhook.Config{AllowPrivate: true})
	q.Register(webhook.DeliverKind, w.Deliver, w.DeliveryLimits())
	return w
}

type webhookAddCmd struct {
	URL       string `arg:"" help:"The endpoint's URL (http or https)."`
	Org       string `name:"org" required:"" help:"Organisation name."`
	Events    string `name:"events" help:"Event types, comma separated (default: all of them)."`
	Namespace string `name:"namespace" help:"Only events of this namespace."`
}

func (c *webhookAddCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	w := env.webhooks()
	in := webhook.Input{URL: &c.URL}
	if c.Events != "" {
		types := strings.Split(strings.ReplaceAll(c.Events, " ", ""), ",")
		in.EventTypes = &types
	}
	if c.Namespace != "" {
		in.Namespace = &c.Namespace
	}
	ep, err := w.CreateEndpoint(env.ctx, actAs(o), in)
	if err != nil {
		return err
	}
	env.print(webhook.View(ep, true), "Created webhook endpoint %s for organisation %s: %s (%s)\nSecret (shown once, store it now): %s",
		ep.ID, o.Name, ep.URL, strings.Join(ep.EventTypes, ", "), ep.Secret)
	return nil
}

type webhookListCmd struct {
	Org string `name:"org" help:"Organisation name (default: every organisation's endpoints)."`
}

func (c *webhookListCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	orgID := ""
	if c.Org != "" {
		o, err := env.tenants.OrgByName(env.ctx, c.Org)
		if err != nil {
			return err
		}
		orgID = o.ID
	}
	eps, err := env.webhooks().List(env.ctx, orgID)
	if err != nil {
		return err
	}
	if env.json {
		views := make([]any, len(eps))
		for i, ep := range eps {
			views[i] = webhook.View(ep, false)
		}
		env.print(map[string]any{"data": views}, "")
		return nil
	}
	for _, ep := range eps {
		state := "enabled"
		if !ep.Enabled {
			state = "disabled"
			if ep.DisabledReason != "" {
				state += " (" + ep.DisabledReason + ")"
			}
		}
		ns := ""
		if ep.Namespace != "" {
			ns = " namespace " + ep.Namespace
		}
		fmt.Fprintf(env.out, "%s  org %s  %s  %s%s  %s\n", ep.ID, ep.OrgID, ep.URL, strings.Join(ep.EventTypes, ","), ns, state)
	}
	return nil
}

type webhookRemoveCmd struct {
	ID string `arg:"" name:"id" help:"Id of the endpoint, as printed by webhook add or list."`
}

func (c *webhookRemoveCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	w := env.webhooks()
	ep, err := w.Get(env.ctx, "", c.ID)
	if err != nil {
		return err
	}
	o, err := env.tenants.OrgByID(env.ctx, ep.OrgID)
	if err != nil {
		return err
	}
	if err := w.DeleteEndpoint(env.ctx, actAs(o), webhook.EndpointRequest{ID: ep.ID}); err != nil {
		return err
	}
	env.print(map[string]any{"id": c.ID, "removed": true}, "Removed webhook endpoint %s", c.ID)
	return nil
}

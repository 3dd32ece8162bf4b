package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
)

// The list commands print one row per object, with a header, or with --json
// one JSON object holding the list (an empty list is [], never null).

type orgListCmd struct{}

func (c *orgListCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	orgs, err := env.tenants.ListOrgs(env.ctx)
	if err != nil {
		return err
	}
	if env.json {
		out := make([]orgJSON, 0, len(orgs))
		for _, o := range orgs {
			out = append(out, orgView(o))
		}
		env.print(map[string]any{"organisations": out}, "")
		return nil
	}
	w := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tID\tTOTP\tTOTP DEVICE LIMIT\tCREATED")
	for _, o := range orgs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", o.Name, o.ID, onOff(o.TOTPEnabled), o.TOTPDeviceLimit, stamp(&o.CreatedAt))
	}
	return w.Flush()
}

type namespaceListCmd struct {
	Org string `name:"org" required:"" help:"Organisation: its namespaces and those shared with it."`
}

// namespaceJSON is one namespace of namespace list --json.
type namespaceJSON struct {
	ID              string `json:"id"`
	Namespace       string `json:"namespace"`
	OrganisationID  string `json:"organisation_id"`
	RetentionTime   int    `json:"retention_time"`
	QuotaLimit      *int   `json:"quota_limit"`
	CaptureRawEmail bool   `json:"capture_raw_email"`
	Shared          bool   `json:"shared"`
	CreatedAt       string `json:"created_at"`
}

func (c *namespaceListCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	list, err := env.tenants.ListNamespaces(env.ctx, o.ID)
	if err != nil {
		return err
	}
	out := make([]namespaceJSON, 0, len(list))
	for _, n := range list {
		out = append(out, namespaceJSON{ID: n.ID, Namespace: n.Name, OrganisationID: n.OrgID, RetentionTime: n.RetentionTime,
			QuotaLimit: n.QuotaLimit, CaptureRawEmail: n.CaptureRawEmail, Shared: n.OrgID != o.ID, CreatedAt: stamp(&n.CreatedAt)})
	}
	if env.json {
		env.print(map[string]any{"organisation": o.Name, "namespaces": out}, "")
		return nil
	}
	w := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tID\tRETENTION\tQUOTA\tSHARED\tCREATED")
	for _, n := range out {
		quota := "-"
		if n.QuotaLimit != nil {
			quota = fmt.Sprint(*n.QuotaLimit)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Namespace, n.ID, time.Duration(n.RetentionTime)*time.Second, quota, yesNo(n.Shared), n.CreatedAt)
	}
	return w.Flush()
}

type smsNumberListCmd struct {
	Org string `name:"org" required:"" help:"Organisation."`
}

func (c *smsNumberListCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	numbers, err := sms.NewService(env.db, nil, 0, nil).Numbers(env.ctx, o.ID)
	if err != nil {
		return err
	}
	if env.json {
		env.print(map[string]any{"organisation": o.Name, "sms_numbers": numbers}, "")
		return nil
	}
	w := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PHONE\tID\tSTATUS\tCOUNTRY\tTEST\tCREATED")
	for _, n := range numbers {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(n.Phone), n.ID, n.Status, n.Country, yesNo(n.IsTest), stamp(&n.CreatedAt))
	}
	return w.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

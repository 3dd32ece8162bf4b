package main

import (
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
)

// orgUsageCmd is `catchbox admin org usage NAME [--month YYYY-MM]` (contract
// section 3): the organisation's outbound usage in a calendar month (UTC),
// the messages it sent with at least one external recipient. Messages to
// its own namespaces only are not outbound usage.
type orgUsageCmd struct {
	Name  string `arg:"" help:"Organisation name."`
	Month string `name:"month" placeholder:"YYYY-MM" help:"Calendar month, UTC (default: the current one)."`
}

// usageJSON is the --json output.
type usageJSON struct {
	outstore.MonthlyUsage
	Organisation string `json:"organisation"`
}

func (c *orgUsageCmd) Run(a *adminCmd) error {
	month, err := outstore.ParseMonth(c.Month, time.Now())
	if err != nil {
		return err
	}
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	o, err := env.tenants.OrgByName(env.ctx, c.Name)
	if err != nil {
		return err
	}
	u, err := outstore.NewStore(env.db, 0, nil).MonthlyUsage(env.ctx, o.ID, month)
	if err != nil {
		return err
	}
	env.print(usageJSON{MonthlyUsage: u, Organisation: o.Name},
		"Organisation %s sent %d outbound %s in %s (messages with an external recipient)", o.Name, u.Messages, plural(u.Messages, "message"), u.Month)
	return nil
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

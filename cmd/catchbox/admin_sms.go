package main

import (
	"github.com/catchbox/catchbox/internal/sms"
)

type smsNumberCmd struct {
	Add  smsNumberAddCmd  `cmd:"" help:"Add an SMS number to an organisation."`
	List smsNumberListCmd `cmd:"" help:"List an organisation's SMS numbers."`
}

type smsNumberAddCmd struct {
	Org     string `name:"org" required:"" help:"Owning organisation."`
	Phone   string `name:"phone" help:"Phone number in E.164, e.g. +15551234567 (none while requested)."`
	Country string `name:"country" help:"ISO 3166-1 alpha-2 country code (default: derived from the phone number; required for a requested number)."`
	Status  string `name:"status" help:"requested, active or disabled (default: active with --phone, requested without)."`
	Test    bool   `name:"test" help:"Mark it a test number (is_test_number)."`
}

func (c *smsNumberAddCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	svc := sms.NewService(env.db, nil, 0, nil)
	n, err := svc.AddNumber(env.ctx, o.ID, sms.NumberSpec{Phone: c.Phone, Country: c.Country, Status: sms.Status(c.Status), IsTest: c.Test})
	if err != nil {
		return err
	}
	phone := n.Phone
	if phone == "" {
		phone = "no phone number yet"
	}
	env.print(n, "Added SMS number %s (id %s, %s, %s) for organisation %s", phone, n.ID, n.Status, n.Country, o.Name)
	return nil
}

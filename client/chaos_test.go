package client_test

import (
	"context"
	"errors"
	"net/smtp"
	"net/textproto"
	"reflect"
	"testing"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/internal/testserver"
)

// TestChaosRules sets, reads and clears a namespace's fault rules, sees a
// refused list's fields named, and sees the server apply a rule over SMTP.
func TestChaosRules(t *testing.T) {
	eachServer(t, func(t *testing.T, s *testserver.Server, c *client.Client) {
		ctx := context.Background()
		ns := uniqueNamespace(t)
		if _, err := c.SaveNamespace(ctx, ns, client.SettingsRequest{}); err != nil {
			t.Fatal(err)
		}
		rules, err := c.ChaosRules(ctx, ns)
		if err != nil || rules == nil || len(rules) != 0 {
			t.Fatalf("rules of a new namespace: %#v, %v", rules, err)
		}
		set, err := c.SetChaosRules(ctx, ns, []client.ChaosRule{
			{Stage: client.StageRcpt, Match: "Bounce@*", Reply: "550  5.1.1  No such user"},
			{Stage: client.StageAfterData, Every: client.Ptr(3), DelayMS: 5},
		})
		want := []client.ChaosRule{
			{Stage: client.StageRcpt, Match: "bounce@*", Reply: "550 5.1.1 No such user"},
			{Stage: client.StageAfterData, Every: client.Ptr(3), DelayMS: 5},
		}
		if err != nil || !reflect.DeepEqual(set, want) {
			t.Fatalf("SetChaosRules = %#v, %v", set, err)
		}
		if got, err := c.ChaosRules(ctx, ns); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ChaosRules = %#v, %v", got, err)
		}

		err = smtp.SendMail(s.SMTP, nil, "app@example.com", []string{"bounce@" + ns + ".localhost"}, []byte("Subject: x\r\n\r\nx\r\n"))
		var te *textproto.Error
		if !errors.As(err, &te) || te.Code != 550 || te.Msg != "5.1.1 No such user" {
			t.Fatalf("RCPT to the bounce address: %v", err)
		}

		_, err = c.SetChaosRules(ctx, ns, []client.ChaosRule{{Stage: "helo", Reply: "421"}, {Stage: client.StageRcpt, DelayMS: 70000}})
		var ae *client.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 2 || ae.Errors[0].Field != "rules[0].stage" || ae.Errors[1].Field != "rules[1].delay_ms" {
			t.Fatalf("a refused list: %v (%+v)", err, ae)
		}
		if got, _ := c.ChaosRules(ctx, ns); !reflect.DeepEqual(got, want) {
			t.Fatalf("a refused list changed the rules: %#v", got)
		}
		if err := c.ClearChaosRules(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if got, err := c.ChaosRules(ctx, ns); err != nil || len(got) != 0 {
			t.Fatalf("after ClearChaosRules: %#v, %v", got, err)
		}
		if client.ErrorCode(c.ClearChaosRules(ctx, "no-such-namespace")) != "not_found" {
			t.Fatal("clearing an unknown namespace is not not_found")
		}
	})
}

package chaos_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

type fixture struct {
	db      *store.DB
	tenants *tenant.Service
	table   *chaos.Table
	svc     *chaos.Service
	owner   tenant.Principal
	other   tenant.Principal
	ns      tenant.Namespace
}

func setup(t *testing.T, db *store.DB) fixture {
	t.Helper()
	ctx := context.Background()
	tenants := tenant.NewService(db, secret.New([]byte("0123456789abcdef0123456789abcdef")), 0)
	org, err := tenants.CreateOrg(ctx, "acme", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	otherOrg, err := tenants.CreateOrg(ctx, "globex", 100, true)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := tenants.CreateNamespace(ctx, org.ID, "flaky", tenant.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	table := chaos.NewTable(db)
	if err := table.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	return fixture{db: db, tenants: tenants, table: table, svc: chaos.NewService(db, tenants, nil, table), ns: ns,
		owner: tenant.Principal{Org: org, KeyID: "k1", Orgs: []tenant.Org{org}},
		other: tenant.Principal{Org: otherOrg, KeyID: "k2", Orgs: []tenant.Org{otherOrg}}}
}

func ptr[T any](v T) *T { return &v }

func TestSetGetClear(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		got, err := f.svc.Rules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"})
		if err != nil || len(got.Rules) != 0 || got.Rules == nil {
			t.Fatalf("rules before any: %#v, %v; want an empty list", got.Rules, err)
		}
		set, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "FLAKY", Rules: []chaos.Rule{
			{Stage: chaos.StageRcpt, Match: "Bounce-*@*", Reply: "550   5.1.1   No such user here"},
			{Stage: chaos.StageAfterData, Every: ptr(3), Reply: "451 4.3.0 Try again", DelayMS: 10},
			{Stage: chaos.StageData, Probability: ptr(0.5), Disconnect: true},
		}})
		if err != nil {
			t.Fatal(err)
		}
		want := []chaos.Rule{
			{Stage: chaos.StageRcpt, Match: "bounce-*@*", Reply: "550 5.1.1 No such user here"},
			{Stage: chaos.StageAfterData, Every: ptr(3), Reply: "451 4.3.0 Try again", DelayMS: 10},
			{Stage: chaos.StageData, Probability: ptr(0.5), Disconnect: true},
		}
		if !reflect.DeepEqual(set.Rules, want) {
			t.Fatalf("set answered %#v, want %#v", set.Rules, want)
		}
		got, err = f.svc.Rules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"})
		if err != nil || !reflect.DeepEqual(got.Rules, want) {
			t.Fatalf("rules read back: %#v, %v", got.Rules, err)
		}
		if !f.table.Has(f.ns.ID, chaos.StageRcpt) || f.table.Has(f.ns.ID, chaos.StageMail) {
			t.Fatal("the table does not have the rules once SetRules returned")
		}
		if err := f.svc.ClearRules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"}); err != nil {
			t.Fatal(err)
		}
		got, err = f.svc.Rules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"})
		if err != nil || len(got.Rules) != 0 {
			t.Fatalf("rules after clear: %#v, %v", got.Rules, err)
		}
		if f.table.Has(f.ns.ID, chaos.StageRcpt) {
			t.Fatal("the table keeps cleared rules")
		}
		// Clearing again is no error.
		if err := f.svc.ClearRules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInvalidRulesKeepTheOldOnes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		old := []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451 4.7.1 Greylisted"}}
		if _, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: old}); err != nil {
			t.Fatal(err)
		}
		tooMany := make([]chaos.Rule, chaos.MaxRules+1)
		for i := range tooMany {
			tooMany[i] = chaos.Rule{Stage: chaos.StageRcpt, Reply: "451"}
		}
		cases := []struct {
			name   string
			rules  []chaos.Rule
			fields []string
			code   string
		}{
			{"connect stage", []chaos.Rule{{Stage: "connect", Reply: "421"}}, []string{"rules[0].stage"}, "stage_not_per_namespace"},
			{"helo stage", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451"}, {Stage: "helo", Reply: "421"}}, []string{"rules[1].stage"}, "stage_not_per_namespace"},
			{"unknown stage", []chaos.Rule{{Stage: "quit", Reply: "421"}}, []string{"rules[0].stage"}, "invalid_parameter"},
			{"2xx reply", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "250 2.0.0 OK"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"3xx reply", []chaos.Rule{{Stage: chaos.StageData, Reply: "354 go"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"bad second digit", []chaos.Rule{{Stage: chaos.StageData, Reply: "491 nope"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"class mismatch", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "550 4.1.1 no"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"bad enhanced", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "550 5.1 no"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"control character", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "550 5.1.1 no\r\n250 ok"}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"delay over the limit", []chaos.Rule{{Stage: chaos.StageRcpt, DelayMS: 60001}}, []string{"rules[0].delay_ms"}, "invalid_parameter"},
			{"negative delay", []chaos.Rule{{Stage: chaos.StageRcpt, DelayMS: -1, Reply: "451"}}, []string{"rules[0].delay_ms"}, "invalid_parameter"},
			{"no action", []chaos.Rule{{Stage: chaos.StageRcpt}}, []string{"rules[0].reply"}, "invalid_parameter"},
			{"probability over 1", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451", Probability: ptr(1.5)}}, []string{"rules[0].probability"}, "invalid_parameter"},
			{"every zero", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451", Every: ptr(0)}}, []string{"rules[0].every"}, "invalid_parameter"},
			{"every and probability", []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451", Every: ptr(2), Probability: ptr(0.5)}}, []string{"rules[0].every"}, "invalid_parameter"},
			{"several at once", []chaos.Rule{{Stage: "x", Reply: "200"}}, []string{"rules[0].stage", "rules[0].reply"}, "invalid_parameter"},
			{"too many rules", tooMany, []string{"rules"}, "too_many_rules"},
		}
		for _, c := range cases {
			_, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: c.rules})
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Kind != problem.Invalid {
				t.Fatalf("%s: err %v, want an Invalid problem", c.name, err)
			}
			var fields []string
			for _, fe := range pe.Fields {
				fields = append(fields, fe.Field)
			}
			if !reflect.DeepEqual(fields, c.fields) || pe.Code != c.code {
				t.Errorf("%s: fields %v code %s, want %v %s (%s)", c.name, fields, pe.Code, c.fields, c.code, pe.Message)
			}
		}
		got, err := f.svc.Rules(ctx, f.owner, chaos.NamespaceRequest{Namespace: "flaky"})
		if err != nil || !reflect.DeepEqual(got.Rules, old) {
			t.Fatalf("after refused changes the rules are %#v (%v), want the old %#v", got.Rules, err, old)
		}
	})
}

func TestNamespaceNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		if _, err := f.tenants.ShareNamespace(ctx, "flaky", f.other.Org.ID); err != nil {
			t.Fatal(err)
		}
		rules := []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451"}}
		for _, c := range []struct {
			p    tenant.Principal
			name string
		}{{f.owner, "nosuch"}, {f.other, "flaky"}, {tenant.Principal{}, "flaky"}} {
			_, err1 := f.svc.SetRules(ctx, c.p, chaos.SetRequest{Namespace: c.name, Rules: rules})
			_, err2 := f.svc.Rules(ctx, c.p, chaos.NamespaceRequest{Namespace: c.name})
			err3 := f.svc.ClearRules(ctx, c.p, chaos.NamespaceRequest{Namespace: c.name})
			for _, err := range []error{err1, err2, err3} {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Kind != problem.NotFound {
					t.Fatalf("%q as %q: %v, want not found", c.name, c.p.Org.Name, err)
				}
			}
		}
		// An invalid list on an unknown namespace is still not found.
		_, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "nosuch", Rules: []chaos.Rule{{Stage: "connect"}}})
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Kind != problem.NotFound {
			t.Fatalf("invalid rules on an unknown namespace: %v, want not found", err)
		}
	})
}

func TestFire(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		_, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: []chaos.Rule{
			{Stage: chaos.StageRcpt, Match: "slow-*@flaky.*", DelayMS: 250},
			{Stage: chaos.StageRcpt, Match: "never@*", Probability: ptr(0.0), Reply: "550"},
			{Stage: chaos.StageRcpt, Match: "half@*", Probability: ptr(0.5), Reply: "451 4.3.0 Half"},
			{Stage: chaos.StageRcpt, Reply: "550 5.1.1 Nobody", Disconnect: true},
			{Stage: chaos.StageMail, Match: "bad?@example.com", Reply: "553"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		fault, ok := f.table.Fire(ctx, f.ns.ID, chaos.StageRcpt, "Slow-1@FLAKY.localhost")
		if !ok || fault.Rule != 0 || fault.Delay != 250*time.Millisecond || fault.Reply != nil || fault.Action() != "delay" {
			t.Fatalf("slow recipient: %+v %v", fault, ok)
		}
		// probability 0 never fires: the next rule that matches does.
		fault, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageRcpt, "never@flaky.localhost")
		if !ok || fault.Rule != 3 || fault.Reply.Code != 550 || !fault.Disconnect || fault.String() != "rcpt rules[3] reply+disconnect 550" {
			t.Fatalf("never: %+v %v (%s)", fault, ok, fault)
		}
		f.table.Rand = func() float64 { return 0.49 }
		if fault, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageRcpt, "half@x"); !ok || fault.Rule != 2 || fault.Reply.Text != "Half" || fault.Reply.Enhanced != [3]int{4, 3, 0} {
			t.Fatalf("half under 0.5: %+v %v", fault, ok)
		}
		f.table.Rand = func() float64 { return 0.5 }
		if fault, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageRcpt, "half@x"); !ok || fault.Rule != 3 {
			t.Fatalf("half at 0.5: %+v %v", fault, ok)
		}
		if fault, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageMail, "bad1@example.com"); !ok || fault.Rule != 4 {
			t.Fatalf("mail: %+v %v", fault, ok)
		}
		if _, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageMail, "bad12@example.com"); ok {
			t.Fatal("? matched two characters")
		}
		if _, ok = f.table.Fire(ctx, f.ns.ID, chaos.StageData, "a@b"); ok {
			t.Fatal("a stage without rules fired")
		}
	})
}

// TestEveryCountsAcrossReplicas counts one rule's messages from two tables
// over one store, as two replicas do: the rule fires on the 3rd, 6th and 9th
// message whichever table saw it, and a new list starts counting afresh.
func TestEveryCountsAcrossReplicas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx := context.Background()
		other := chaos.NewTable(db)
		rules := []chaos.Rule{{Stage: chaos.StageAfterData, Match: "*@flaky.*", Every: ptr(3), Reply: "451 4.3.0 Every third"}}
		if _, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: rules}); err != nil {
			t.Fatal(err)
		}
		if err := other.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		var fired []int
		for i := 1; i <= 9; i++ {
			table := f.table
			if i%2 == 0 {
				table = other
			}
			// A message that does not match is not counted.
			if _, ok := table.Fire(ctx, f.ns.ID, chaos.StageAfterData, "a@elsewhere.test"); ok {
				t.Fatal("a message that does not match fired")
			}
			if _, ok := table.Fire(ctx, f.ns.ID, chaos.StageAfterData, "x@other.test", "a@flaky.localhost"); ok {
				fired = append(fired, i)
			}
		}
		if !reflect.DeepEqual(fired, []int{3, 6, 9}) {
			t.Fatalf("fired on messages %v, want 3, 6, 9", fired)
		}
		// Setting the list again restarts the count.
		if _, err := f.svc.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: rules}); err != nil {
			t.Fatal(err)
		}
		fired = nil
		for i := 1; i <= 3; i++ {
			if _, ok := f.table.Fire(ctx, f.ns.ID, chaos.StageAfterData, "a@flaky.localhost"); ok {
				fired = append(fired, i)
			}
		}
		if !reflect.DeepEqual(fired, []int{3}) {
			t.Fatalf("after a new list fired on %v, want 3", fired)
		}
	})
}

// TestTableNeedsNoStoreWithoutRules shows that a namespace without rules is
// answered from memory: with the store closed, the table still answers.
func TestTableNeedsNoStoreWithoutRules(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	f := setup(t, db)
	if _, err := f.svc.SetRules(context.Background(), f.owner, chaos.SetRequest{Namespace: "flaky",
		Rules: []chaos.Rule{{Stage: chaos.StageRcpt, Reply: "451"}}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, ok := f.table.Fire(context.Background(), "another-namespace", chaos.StageRcpt, "a@b"); ok {
		t.Fatal("a namespace without rules fired")
	}
	if fault, ok := f.table.Fire(context.Background(), f.ns.ID, chaos.StageRcpt, "a@b"); !ok || fault.Reply.Code != 451 {
		t.Fatalf("with the store closed, the copy of the rules did not fire: %+v %v", fault, ok)
	}
}

// TestWatchSeesChangesMadeElsewhere changes the rules through a service that
// has no table and no notifier (the admin command line's process): the
// server's table finds the change by its version within RefreshInterval.
func TestWatchSeesChangesMadeElsewhere(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := setup(t, db)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); f.table.Watch(ctx, nil) }()
		admin := chaos.NewService(db, f.tenants, nil, nil)
		if _, err := admin.SetRules(ctx, f.owner, chaos.SetRequest{Namespace: "flaky", Rules: []chaos.Rule{{Stage: chaos.StageData, Reply: "554"}}}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the table to see a change made by another process", func() bool { return f.table.Has(f.ns.ID, chaos.StageData) })
		cancel()
		<-done
	})
}

func TestParseReply(t *testing.T) {
	for _, c := range []struct {
		in   string
		want chaos.Reply
	}{
		{"451", chaos.Reply{Code: 451}},
		{"451 4.3.0", chaos.Reply{Code: 451, Enhanced: [3]int{4, 3, 0}}},
		{"550 5.1.1 No such user", chaos.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Text: "No such user"}},
		{"554 Go away now", chaos.Reply{Code: 554, Text: "Go away now"}},
		{"421 4.7.999 Slow down", chaos.Reply{Code: 421, Enhanced: [3]int{4, 7, 999}, Text: "Slow down"}},
		{"552 version 1.2 is old", chaos.Reply{Code: 552, Text: "version 1.2 is old"}},
	} {
		got, err := chaos.ParseReply(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseReply(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "4", "45", "4510", "250 ok", "354", "600 x", "460 x", "45x", "451 5.3.0 x", "451 4.3 x", "451 4.3.0.1 x", "451 4.1000.0 x", "451 4.-1.0 x", "451 é"} {
		if _, err := chaos.ParseReply(bad); err == nil {
			t.Errorf("ParseReply(%q) accepted", bad)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"*@flaky.localhost", "x@flaky.localhost", true},
		{"*@flaky.localhost", "x@flaky.localhost.evil", false},
		{"bounce-??@*", "bounce-12@x", true},
		{"bounce-??@*", "bounce-1@x", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"ü*", "über@x", true},
		{"", "", true},
		{"", "a", false},
		{"*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	} {
		if got := chaos.Glob(c.pattern, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

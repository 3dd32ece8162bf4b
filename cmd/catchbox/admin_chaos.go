package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/tenant"
)

// maxRulesFile bounds the rules file read by namespace chaos.
const maxRulesFile = 1 << 20

// namespaceChaosCmd is `catchbox admin namespace chaos NAME --rules FILE|- |
// --clear` (contract section 3): it sets or clears the namespace's SMTP fault
// rules through the same operation as PUT and DELETE
// /api/namespace/{namespace}/chaos, acting as the namespace's owner. The file
// holds the API's body, {"rules": [...]}. Running servers apply the change
// within chaos.RefreshInterval.
type namespaceChaosCmd struct {
	Name  string `arg:"" help:"Namespace name."`
	Rules string `name:"rules" placeholder:"FILE|-" help:"JSON file of the rules, as the API's body {\"rules\": [...]}; - reads standard input."`
	Clear bool   `name:"clear" help:"Remove every fault rule of the namespace."`
}

func (c *namespaceChaosCmd) Run(a *adminCmd) error {
	if (c.Rules == "") == !c.Clear {
		return fmt.Errorf("%w: give either --rules FILE (- for standard input) or --clear", errUsage)
	}
	var rules []chaos.Rule
	if c.Rules != "" {
		var err error
		if rules, err = readRules(c.Rules); err != nil {
			return err
		}
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
	p := tenant.Principal{Org: owner, Orgs: []tenant.Org{owner}}
	svc := chaos.NewService(env.db, env.tenants, nil, nil)
	if c.Clear {
		if err := svc.ClearRules(env.ctx, p, chaos.NamespaceRequest{Namespace: n.Name}); err != nil {
			return err
		}
		env.print(map[string]any{"namespace": n.Name, "rules": []chaos.Rule{}}, "Cleared the fault rules of namespace %s", n.Name)
		return nil
	}
	list, err := svc.SetRules(env.ctx, p, chaos.SetRequest{Namespace: n.Name, Rules: rules})
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Set %d fault rule(s) on namespace %s; running servers apply them within %s", len(list.Rules), n.Name, chaos.RefreshInterval)
	for i, r := range list.Rules {
		line, _ := json.Marshal(r)
		fmt.Fprintf(&b, "\n  rules[%d] %s", i, line)
	}
	env.print(map[string]any{"namespace": n.Name, "rules": list.Rules}, "%s", b.String())
	return nil
}

// readRules reads {"rules": [...]} from a file, or from standard input for -.
func readRules(name string) ([]chaos.Rule, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxRulesFile+1))
	if err != nil {
		return nil, fmt.Errorf("read the rules: %w", err)
	}
	if len(data) > maxRulesFile {
		return nil, fmt.Errorf("%w: the rules file is over %d bytes", errUsage, maxRulesFile)
	}
	var body struct {
		Rules *[]json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, fmt.Errorf("%w: the rules are not a JSON object {\"rules\": [...]}: %w", errUsage, err)
	}
	if body.Rules == nil {
		return nil, fmt.Errorf("%w: the JSON object has no \"rules\" list", errUsage)
	}
	return chaos.DecodeRules(*body.Rules)
}

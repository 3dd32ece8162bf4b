package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The settings page's fault-rule section: the namespace's rules in a table,
// a form that adds one, a remove button per rule, the list as JSON to edit
// whole (the API's body), and a button that clears them. Every form calls
// the same operations as the API (chaos.Service); a refused change shows the
// settings page again with the fields named and what was typed kept.

// chaosView is what the section's template shows.
type chaosView struct {
	Rules []chaosRow
	JSON  string       // the list as the API's body, for the JSON form
	Add   chaosAddForm // the add form's values after a refusal
	Errs  []problem.FieldError
	Limit int
}

type chaosRow struct {
	Index  int
	Number int // Index + 1, as the page counts
	chaos.Rule
	When   string
	Action string
}

type chaosAddForm struct {
	Stage, Match, Probability, Every, Reply, DelayMS string
	Disconnect                                       bool
}

// chaosSection reads the namespace's rules for the settings page; nil when
// the dashboard has no chaos service or the organisation does not own the
// namespace.
func (d *Dashboard) chaosSection(r *http.Request, n tenant.Namespace) (*chaosView, error) {
	if d.Chaos == nil || n.OrgID != tenant.OrgFrom(r.Context()).ID {
		return nil, nil
	}
	list, err := d.Chaos.Rules(r.Context(), tenant.PrincipalFrom(r.Context()), chaos.NamespaceRequest{Namespace: n.Name})
	if err != nil {
		return nil, err
	}
	v := &chaosView{Limit: chaos.MaxRules, JSON: rulesJSON(list.Rules), Add: chaosAddForm{Stage: string(chaos.StageRcpt)}}
	for i, rule := range list.Rules {
		v.Rules = append(v.Rules, chaosRow{Index: i, Number: i + 1, Rule: rule, When: ruleWhen(rule), Action: ruleAction(rule)})
	}
	return v, nil
}

func rulesJSON(rules []chaos.Rule) string {
	if rules == nil {
		rules = []chaos.Rule{}
	}
	b, _ := json.MarshalIndent(map[string]any{"rules": rules}, "", "  ")
	return string(b)
}

func ruleWhen(r chaos.Rule) string {
	switch {
	case r.Every != nil:
		return fmt.Sprintf("every %d", *r.Every)
	case r.Probability != nil && *r.Probability < 1:
		return strconv.FormatFloat(*r.Probability*100, 'f', -1, 64) + "% of the time"
	}
	return "always"
}

func ruleAction(r chaos.Rule) string {
	var parts []string
	if r.DelayMS > 0 {
		parts = append(parts, fmt.Sprintf("wait %d ms", r.DelayMS))
	}
	if r.Reply != "" {
		parts = append(parts, "reply "+r.Reply)
	}
	if r.Disconnect {
		parts = append(parts, "disconnect")
	}
	return strings.Join(parts, ", then ")
}

// SetChaosHandler answers POST /inboxes/{namespace}/chaos: the rules as
// JSON, {"rules": [...]} as the API takes them, replace the list.
func (d *Dashboard) SetChaosHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.chaosForm(w, r)
	if err != nil {
		return err
	}
	text := r.PostForm.Get("rules_json")
	rules, err := parseRulesJSON(text)
	if err == nil {
		_, err = d.Chaos.SetRules(r.Context(), tenant.PrincipalFrom(r.Context()), chaos.SetRequest{Namespace: n.Name, Rules: rules})
	}
	if err != nil {
		return d.chaosRefused(w, r, n, err, func(v *chaosView) { v.JSON = text })
	}
	return redirect(w, r, "/inboxes/"+n.Name+"/settings#chaos", fmt.Sprintf("Saved %d fault rule(s).", len(rules)))
}

func parseRulesJSON(text string) ([]chaos.Rule, error) {
	var body struct {
		Rules *[]json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal([]byte(text), &body); err != nil {
		return nil, problem.Field("rules", "must be a JSON object {\"rules\": [...]}")
	}
	if body.Rules == nil {
		return nil, problem.Field("rules", "is required: a list of rules (an empty list clears them)")
	}
	return chaos.DecodeRules(*body.Rules)
}

// AddChaosHandler answers POST /inboxes/{namespace}/chaos/add: one rule from
// the form's fields, added at the end of the list.
func (d *Dashboard) AddChaosHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.chaosForm(w, r)
	if err != nil {
		return err
	}
	form := chaosAddForm{Stage: r.PostForm.Get("stage"), Match: strings.TrimSpace(r.PostForm.Get("match")),
		Probability: strings.TrimSpace(r.PostForm.Get("probability")), Every: strings.TrimSpace(r.PostForm.Get("every")),
		Reply: strings.TrimSpace(r.PostForm.Get("reply")), DelayMS: strings.TrimSpace(r.PostForm.Get("delay_ms")),
		Disconnect: r.PostForm.Get("disconnect") == "on"}
	p := tenant.PrincipalFrom(r.Context())
	list, err := d.Chaos.Rules(r.Context(), p, chaos.NamespaceRequest{Namespace: n.Name})
	if err != nil {
		return err
	}
	rule, err := form.rule(len(list.Rules))
	if err == nil {
		_, err = d.Chaos.SetRules(r.Context(), p, chaos.SetRequest{Namespace: n.Name, Rules: append(list.Rules, rule)})
	}
	if err != nil {
		return d.chaosRefused(w, r, n, err, func(v *chaosView) { v.Add = form })
	}
	return redirect(w, r, "/inboxes/"+n.Name+"/settings#chaos", fmt.Sprintf("Added fault rule %d.", len(list.Rules)+1))
}

// rule reads the add form as the rule at index i, naming its fields as the
// API would (rules[i].every).
func (f chaosAddForm) rule(i int) (chaos.Rule, error) {
	rule := chaos.Rule{Stage: chaos.Stage(f.Stage), Match: f.Match, Reply: f.Reply, Disconnect: f.Disconnect}
	var fe problem.Fields
	name := func(field string) string { return fmt.Sprintf("rules[%d].%s", i, field) }
	if f.Probability != "" {
		p, err := strconv.ParseFloat(f.Probability, 64)
		if err != nil {
			fe.Add(name("probability"), "must be a number between 0 and 1")
		}
		rule.Probability = &p
	}
	if f.Every != "" {
		n, err := strconv.Atoi(f.Every)
		if err != nil {
			fe.Add(name("every"), "must be a whole number")
		}
		rule.Every = &n
	}
	if f.DelayMS != "" {
		n, err := strconv.Atoi(f.DelayMS)
		if err != nil {
			fe.Add(name("delay_ms"), "must be a whole number")
		}
		rule.DelayMS = n
	}
	return rule, fe.Err()
}

// RemoveChaosHandler answers POST /inboxes/{namespace}/chaos/remove: the
// rule at index goes, the others keep their order.
func (d *Dashboard) RemoveChaosHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.chaosForm(w, r)
	if err != nil {
		return err
	}
	p := tenant.PrincipalFrom(r.Context())
	list, err := d.Chaos.Rules(r.Context(), p, chaos.NamespaceRequest{Namespace: n.Name})
	if err != nil {
		return err
	}
	i, err := strconv.Atoi(r.PostForm.Get("index"))
	if err != nil || i < 0 || i >= len(list.Rules) {
		return badRequest("That rule is no longer in the list; reload the page.")
	}
	rules := append(list.Rules[:i:i], list.Rules[i+1:]...)
	if _, err := d.Chaos.SetRules(r.Context(), p, chaos.SetRequest{Namespace: n.Name, Rules: rules}); err != nil {
		return err
	}
	return redirect(w, r, "/inboxes/"+n.Name+"/settings#chaos", fmt.Sprintf("Removed fault rule %d.", i+1))
}

// ClearChaosHandler answers POST /inboxes/{namespace}/chaos/clear.
func (d *Dashboard) ClearChaosHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.chaosForm(w, r)
	if err != nil {
		return err
	}
	if err := d.Chaos.ClearRules(r.Context(), tenant.PrincipalFrom(r.Context()), chaos.NamespaceRequest{Namespace: n.Name}); err != nil {
		return err
	}
	return redirect(w, r, "/inboxes/"+n.Name+"/settings#chaos", "Cleared the fault rules: this inbox's SMTP behaves normally.")
}

// chaosForm is the start of every fault-rule form's POST: the rules'
// service must be on (else the page does not exist), the namespace the
// caller's organisation's own, and the form readable.
func (d *Dashboard) chaosForm(w http.ResponseWriter, r *http.Request) (tenant.Namespace, error) {
	if d.Chaos == nil {
		return tenant.Namespace{}, notFound("Page")
	}
	n, err := d.ownNamespace(r)
	if err != nil {
		return tenant.Namespace{}, err
	}
	return n, parseForm(w, r)
}

// chaosRefused shows the settings page again, 400, with the refused
// change's fields named and what was typed kept (keep); an error that is not
// the user's is returned as it is.
func (d *Dashboard) chaosRefused(w http.ResponseWriter, r *http.Request, n tenant.Namespace, err error, keep func(*chaosView)) error {
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Kind != problem.Invalid {
		return err
	}
	v, verr := d.chaosSection(r, n)
	if verr != nil || v == nil {
		return err
	}
	keep(v)
	v.Errs = pe.Fields
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	return d.settingsPage(w, r, n, v)
}

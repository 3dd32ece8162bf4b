package client

import (
	"context"
	"net/http"
)

// The stages of a mail transaction where a fault rule applies.
const (
	// StageMail is MAIL FROM, on connections authenticated (SMTP AUTH) as
	// the namespace; Match is tested against the sender.
	StageMail = "mail"
	// StageRcpt is a RCPT TO naming a recipient of the namespace.
	StageRcpt = "rcpt"
	// StageData is the DATA command, before its 354.
	StageData = "data"
	// StageAfterData is the end of the message, in place of the 250:
	// nothing is stored unless the rule's action is a delay alone.
	StageAfterData = "after_data"
)

// ChaosRule is one of a namespace's SMTP fault rules (docs/api.md, "Chaos"):
// at Stage, for a message whose address matches Match, with Probability or
// on Every Nth message, the listener waits DelayMS, answers Reply instead of
// its own reply, and/or drops the connection.
type ChaosRule struct {
	Stage string `json:"stage"`
	// Match is a glob (* any run, ? one character) on the whole address,
	// case-insensitive; "" matches every address.
	Match string `json:"match,omitempty"`
	// Probability is the chance, 0 to 1, that a matching message makes the
	// rule fire; nil is 1. Not with Every.
	Probability *float64 `json:"probability,omitempty"`
	// Every fires on the Nth, 2Nth, ... matching message, counted across
	// connections and replicas.
	Every *int `json:"every,omitempty"`
	// Reply is the reply sent instead: "451 4.3.0 Try again later".
	Reply string `json:"reply,omitempty"`
	// DelayMS is a pause, 1 to 60000 ms, before the reply or normal handling.
	DelayMS int `json:"delay_ms,omitempty"`
	// Disconnect closes the connection, after the reply if there is one.
	Disconnect bool `json:"disconnect,omitempty"`
}

type chaosRules struct {
	Rules []ChaosRule `json:"rules"`
}

// SetChaosRules replaces the fault rules of a namespace the organisation
// owns and returns them as stored (PUT /api/namespace/{namespace}/chaos). An
// empty list leaves none. A refused list is an *Error whose Errors name each
// field as rules[i].field; the old rules then stay.
func (c *Client) SetChaosRules(ctx context.Context, namespace string, rules []ChaosRule) ([]ChaosRule, error) {
	if rules == nil {
		rules = []ChaosRule{}
	}
	var out struct {
		Data chaosRules `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodPut, path: "/api/namespace/" + seg(namespace) + "/chaos", body: chaosRules{Rules: rules}}, &out)
	return out.Data.Rules, err
}

// ChaosRules returns a namespace's fault rules, in the order they are tried
// (GET /api/namespace/{namespace}/chaos); an empty list when it has none.
func (c *Client) ChaosRules(ctx context.Context, namespace string) ([]ChaosRule, error) {
	var out struct {
		Data chaosRules `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/namespace/" + seg(namespace) + "/chaos"}, &out)
	return out.Data.Rules, err
}

// ClearChaosRules removes every fault rule of a namespace (DELETE
// /api/namespace/{namespace}/chaos).
func (c *Client) ClearChaosRules(ctx context.Context, namespace string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/namespace/" + seg(namespace) + "/chaos"}, nil)
}

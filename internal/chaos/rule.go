// Package chaos makes a namespace's SMTP misbehave on purpose: an ordered
// list of fault rules per namespace, each of which may refuse, delay or drop
// the connection at one stage of a mail transaction, so that a team can test
// its application's retry, backoff and bounce paths against one namespace
// while every other namespace behaves.
//
// The package owns the rule type and its validation, the rules' storage on
// SQLite and PostgreSQL, the in-memory table the SMTP listener consults
// (Table: no store access for a namespace without rules), and the three
// operations a user can take (Service.SetRules, Service.Rules,
// Service.ClearRules), over which the HTTP API, the dashboard and the admin
// command line are thin adapters. The SMTP listener (internal/smtpd) applies
// what Table.Fire decides.
package chaos

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/problem"
)

// Stage is the point of a mail transaction where a rule applies. The stages
// are per namespace: a connection is not known to be for a namespace before
// it authenticates as one or names one of its recipients, so the connection
// stages (connect, helo) cannot be set (contract, "Chaos").
type Stage string

// The stages a rule may name.
const (
	// StageMail is MAIL FROM, on connections authenticated as the namespace;
	// match is tested against the sender.
	StageMail Stage = "mail"
	// StageRcpt is a RCPT TO naming a recipient of the namespace.
	StageRcpt Stage = "rcpt"
	// StageData is the DATA command, before its 354.
	StageData Stage = "data"
	// StageAfterData is the end of the message, in place of the 250.
	StageAfterData Stage = "after_data"
)

var stages = []Stage{StageMail, StageRcpt, StageData, StageAfterData}

// Limits of a rule list (docs/api.md, "Chaos").
const (
	MaxRules      = 20    // rules per namespace
	MaxDelayMS    = 60000 // delay_ms
	MaxMatchBytes = 320   // match: an address is at most 320 octets (RFC 5321 4.5.3.1)
	MaxReplyBytes = 500   // reply: a reply line is at most 512 octets with its CRLF (RFC 5321 4.5.3.1.5)
	MaxEvery      = 1_000_000
)

// Rule is one fault rule, as the API reads and writes it.
type Rule struct {
	Stage Stage `json:"stage"`
	// Match is a glob (* any run of characters, ? one) tested,
	// case-insensitively, against the whole address: the recipient, or the
	// sender at the mail stage. Empty matches every address.
	Match string `json:"match,omitempty"`
	// Probability is the chance that a matching message makes the rule fire,
	// 0 to 1; nil is 1. It cannot be combined with Every.
	Probability *float64 `json:"probability,omitempty"`
	// Every makes the rule fire on the Nth, 2Nth, ... matching message that
	// reaches it, counted across connections and replicas; nil: Probability.
	Every *int `json:"every,omitempty"`
	// Reply is the reply sent instead of the normal one: "451 4.3.0 text".
	Reply string `json:"reply,omitempty"`
	// DelayMS is a pause before the reply, or before normal handling.
	DelayMS int `json:"delay_ms,omitempty"`
	// Disconnect closes the connection, after the reply if there is one.
	Disconnect bool `json:"disconnect,omitempty"`
}

// Reply is a parsed reply: the code, the enhanced code (RFC 3463; zero when
// none was given) and the text.
type Reply struct {
	Code     int
	Enhanced [3]int
	Text     string
}

// HasEnhanced reports whether the reply names its enhanced status code.
func (r Reply) HasEnhanced() bool { return r.Enhanced[0] != 0 }

// String is the reply as it was written in the rule's canonical form.
func (r Reply) String() string {
	s := strconv.Itoa(r.Code)
	if r.HasEnhanced() {
		s += fmt.Sprintf(" %d.%d.%d", r.Enhanced[0], r.Enhanced[1], r.Enhanced[2])
	}
	if r.Text != "" {
		s += " " + r.Text
	}
	return s
}

// ParseReply reads "451 4.3.0 Try later", "550 No", "421": a reply code of
// class 4 or 5 whose second digit is 0 to 5 (RFC 5321 section 4.2.1), an
// optional enhanced code of the same class with subject and detail of 1 to 3
// digits (RFC 3463 section 2), and an optional text of printable ASCII. The
// error says what is wrong, to be read after the field's name.
func ParseReply(s string) (Reply, error) {
	if len(s) > MaxReplyBytes {
		return Reply{}, fmt.Errorf("must be at most %d characters", MaxReplyBytes)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return Reply{}, fmt.Errorf("must be printable ASCII on one line")
		}
	}
	code, rest, _ := strings.Cut(s, " ")
	if len(code) != 3 || code[0] != '4' && code[0] != '5' || code[1] < '0' || code[1] > '5' || code[2] < '0' || code[2] > '9' {
		return Reply{}, fmt.Errorf("must start with a 4xx or 5xx reply code (the second digit 0 to 5), as in \"451 4.3.0 Try again later\"")
	}
	r := Reply{Code: int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')}
	rest = strings.TrimLeft(rest, " ")
	first, after, _ := strings.Cut(rest, " ")
	if strings.Contains(first, ".") {
		parts := strings.Split(first, ".")
		ok := len(parts) == 3
		for i := 0; ok && i < 3; i++ {
			n, err := strconv.Atoi(parts[i])
			ok = err == nil && len(parts[i]) >= 1 && len(parts[i]) <= 3 && parts[i][0] != '+' && parts[i][0] != '-'
			r.Enhanced[i] = n
		}
		if !ok {
			return Reply{}, fmt.Errorf("has an enhanced status code that is not class.subject.detail, as in 4.3.0")
		}
		if r.Enhanced[0] != r.Code/100 {
			return Reply{}, fmt.Errorf("has an enhanced status code of another class than its reply code (%d with %s)", r.Code, first)
		}
		rest = strings.TrimLeft(after, " ")
	}
	r.Text = strings.TrimSpace(rest)
	return r, nil
}

// problems checks a rule list: one field error per wrong field, named
// rules[i].field, so that a client learns of every mistake at once.
func problems(rules []Rule) problem.Fields {
	var fe problem.Fields
	if len(rules) > MaxRules {
		fe.AddCode("rules", "too_many_rules", fmt.Sprintf("must have at most %d rules", MaxRules))
		return fe
	}
	for i, r := range rules {
		name := func(field string) string { return fmt.Sprintf("rules[%d].%s", i, field) }
		switch {
		case r.Stage == "":
			fe.Add(name("stage"), "is required: one of mail, rcpt, data, after_data")
		case r.Stage == "connect" || r.Stage == "helo":
			fe.AddCode(name("stage"), "stage_not_per_namespace", "cannot be "+string(r.Stage)+": a connection is not known to be for a namespace before MAIL or RCPT; use mail, rcpt, data or after_data")
		case !validStage(r.Stage):
			fe.Add(name("stage"), "must be one of mail, rcpt, data, after_data")
		}
		if len(r.Match) > MaxMatchBytes {
			fe.Add(name("match"), fmt.Sprintf("must be at most %d bytes", MaxMatchBytes))
		} else if !utf8.ValidString(r.Match) || strings.ContainsFunc(r.Match, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			fe.Add(name("match"), "must be text without control characters")
		}
		if r.Probability != nil && (*r.Probability < 0 || *r.Probability > 1 || *r.Probability != *r.Probability) {
			fe.Add(name("probability"), "must be between 0 and 1")
		}
		if r.Every != nil {
			switch {
			case r.Probability != nil:
				fe.Add(name("every"), "cannot be combined with probability")
			case *r.Every < 1 || *r.Every > MaxEvery:
				fe.Add(name("every"), fmt.Sprintf("must be between 1 and %d", MaxEvery))
			}
		}
		if r.Reply != "" {
			if _, err := ParseReply(r.Reply); err != nil {
				fe.Add(name("reply"), err.Error())
			}
		}
		if r.DelayMS < 0 || r.DelayMS > MaxDelayMS {
			fe.Add(name("delay_ms"), fmt.Sprintf("must be between 1 and %d", MaxDelayMS))
		}
		if r.Reply == "" && r.DelayMS == 0 && !r.Disconnect {
			fe.Add(name("reply"), "is required unless delay_ms or disconnect is set: a rule needs an action")
		}
	}
	return fe
}

func validStage(s Stage) bool {
	for _, v := range stages {
		if s == v {
			return true
		}
	}
	return false
}

// canonical is the rule as stored and returned: the reply in its canonical
// form and the match in lower case (it is compared case-insensitively).
func canonical(r Rule) Rule {
	if r.Reply != "" {
		if p, err := ParseReply(r.Reply); err == nil {
			r.Reply = p.String()
		}
	}
	r.Match = strings.ToLower(r.Match)
	return r
}

// Glob reports whether s matches pattern: * is any run of characters
// (none included), ? is one character, anything else itself; both are
// compared as given (callers lower-case them). It runs in O(len(s) *
// len(pattern)) at worst: a mismatch after a * retries from the last *
// only, never from earlier ones.
func Glob(pattern, s string) bool {
	p := []rune(pattern)
	t := []rune(s)
	pi, ti := 0, 0
	star, mark := -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

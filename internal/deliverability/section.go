package deliverability

import (
	"fmt"
	"slices"
)

// Status is a section's verdict, and an issue's severity: the seed's pass,
// warning and fail. A pass issue is evidence of a check that passed; a warning
// is something receiving servers may hold against the mail, or a check that
// could not be made (a lookup that failed); a fail is something that gets mail
// rejected or filed as spam.
type Status string

// The three verdicts, from best to worst.
const (
	Pass    Status = "pass"
	Warning Status = "warning"
	Fail    Status = "fail"
)

func (s Status) rank() int {
	switch s {
	case Fail:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// worse returns the worse of two verdicts.
func worse(a, b Status) Status {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Issue is one finding of a check. Code is stable (docs/api.md lists every
// one); Message says what is wrong and what to change, for a person; Details
// holds the evidence (records found, results, scores), for a program.
type Issue struct {
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Severity Status         `json:"severity"`
	Details  map[string]any `json:"details,omitempty"`
}

// Section is the seed's DeliverabilitySection: a verdict and the issues behind
// it. Each check's result embeds it and adds its own fields (the SPF result,
// the DKIM signatures, the SpamAssassin score), which the seed allows.
type Section struct {
	Status Status  `json:"status"`
	Issues []Issue `json:"issues"`
}

// add records an issue; the message is formatted from format and args.
func (s *Section) add(sev Status, code string, details map[string]any, format string, args ...any) {
	s.Issues = append(s.Issues, Issue{Code: code, Severity: sev, Details: details, Message: fmt.Sprintf(format, args...)})
}

// finish sets the section's verdict from its issues (the worst severity) and
// makes an empty issue list an empty array in JSON.
func (s *Section) finish() {
	s.Status = Pass
	for _, i := range s.Issues {
		s.Status = worse(s.Status, i.Severity)
	}
	if s.Issues == nil {
		s.Issues = []Issue{}
	}
}

// codes lists the codes of a section's issues, for tests and logs.
func (s *Section) codes() []string {
	out := make([]string, 0, len(s.Issues))
	for _, i := range s.Issues {
		out = append(out, i.Code)
	}
	return out
}

// issue returns the first issue with the code, or nil.
func (s *Section) issue(code string) *Issue {
	i := slices.IndexFunc(s.Issues, func(i Issue) bool { return i.Code == code })
	if i < 0 {
		return nil
	}
	return &s.Issues[i]
}

package sms

import (
	"strings"

	"github.com/catchbox/catchbox/internal/notify"
)

// Which held searches a message wakes (notify's match.go): a held search
// (wait=true) is woken only by the messages of its number that its filters
// may find. The terms compare as Search does, so none is left out:
//
//   - body: a Contains term on the "body" fact, the body lower-cased in Go,
//     as body_fold stores it and the search's lower-cased value is sought in
//     it (LIKE with its wildcards escaped);
//   - from_number: a Prefix term on the "from" fact with the search's
//     prefixes (any of them), as the byte-ordered range of the "C"-collated
//     from_number column finds them;
//   - direction: an Equal term on the "direction" fact.
//
// from_date and to_date give no term.
const (
	factBody      = "body"
	factFrom      = "from"
	factDirection = "direction"
)

// want is what a held search q waits for.
func (q Query) want() notify.Want {
	w := notify.Want{Topic: Topic(q.NumberID)}
	if q.Body != "" {
		w.Terms = append(w.Terms, notify.Term{Field: factBody, Kind: notify.Contains, Values: []string{strings.ToLower(q.Body)}})
	}
	if len(q.FromPrefixes) > 0 {
		w.Terms = append(w.Terms, notify.Term{Field: factFrom, Kind: notify.Prefix, Values: q.FromPrefixes})
	}
	if q.Direction != "" {
		w.Terms = append(w.Terms, notify.Term{Field: factDirection, Kind: notify.Equal, Values: []string{q.Direction}})
	}
	return w
}

// arrival is the wake-up event of the stored message m.
func (m Message) arrival() notify.Event {
	return notify.Event{Topic: Topic(m.NumberID), Complete: true, Facts: []notify.Fact{
		{Field: factBody, Value: strings.ToLower(m.Body)},
		{Field: factFrom, Value: m.From},
		{Field: factDirection, Value: m.Direction},
	}}
}

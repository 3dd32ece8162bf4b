package inbox

import (
	"strings"

	"github.com/catchbox/catchbox/internal/notify"
)

// Which held searches an email wakes (notify's match.go).
//
// A held search (wait=true) waits only for the emails its filters may find,
// and an email wakes only the held searches of its namespace whose filters it
// may satisfy. The rule that keeps a search from missing an email: whenever
// Search would find the email, the email's facts satisfy the search's terms.
//
//   - to_addr_prefix: a Prefix term on the "to" facts, which are the email's
//     recipients exactly as email_recipients stores them (header To and Cc,
//     envelope recipients; lower case); the search compares the lower-cased
//     prefix with them byte by byte (a range of a "C"-collated column), as
//     the term does.
//   - subject_includes and from_addr_includes: a Contains term on the
//     "subject" and "from" facts, the subject and From address with every
//     character lower-cased. The search folds with store.Fold on SQLite and
//     PostgreSQL's lower() there; for a value of plain ASCII, each of them
//     finds the value only where the fully lower-cased text has it too. A
//     value with other characters, whose folding the three might not share,
//     gives no term: such a search wakes at every email of its namespace, as
//     it did before.
//   - from_timestamp and to_timestamp give no term (a new email's receipt
//     time is now, and a clock may differ between replicas).
//
// A search with none of these terms wakes at every email of its namespace.
const (
	factTo      = "to"
	factFrom    = "from"
	factSubject = "subject"
)

// want is what a held search q waits for.
func (q Query) want() notify.Want {
	w := notify.Want{Topic: NamespaceTopic(q.NamespaceID)}
	if q.ToAddrPrefix != "" {
		w.Terms = append(w.Terms, notify.Term{Field: factTo, Kind: notify.Prefix, Values: []string{strings.ToLower(q.ToAddrPrefix)}})
	}
	contains := func(field, needle string) {
		if needle != "" && isASCII(needle) {
			w.Terms = append(w.Terms, notify.Term{Field: field, Kind: notify.Contains, Values: []string{strings.ToLower(needle)}})
		}
	}
	contains(factSubject, q.SubjectIncludes)
	contains(factFrom, q.FromAddrIncludes)
	return w
}

// arrival is the wake-up event of the stored email r.
func (r *row) arrival() notify.Event {
	facts := make([]notify.Fact, 0, len(r.recipients)+2)
	for _, a := range r.recipients {
		facts = append(facts, notify.Fact{Field: factTo, Value: a})
	}
	facts = append(facts,
		notify.Fact{Field: factFrom, Value: strings.ToLower(r.fromAddr)},
		notify.Fact{Field: factSubject, Value: strings.ToLower(r.email.Subject)})
	return notify.Event{Topic: NamespaceTopic(r.namespaceID), Facts: facts, Complete: true}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

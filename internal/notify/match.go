package notify

import "strings"

// Waking only the waiters an arrival may satisfy.
//
// A held search waits for one kind of arrival: mail to a recipient starting
// "order-42@", mail whose subject contains "password reset". Waking every
// waiter of a namespace for each of its emails made each wake-up re-run every
// held search: with 1,000 held searches and mail to 100 of them, 100 mails
// cost thousands of searches (docs/benchmarks.md, "Held waits"). So a waiter
// says what it waits for (Want), a writer says what arrived (Event), and the
// hub keeps each waiter in an index under one of its terms: an event is
// looked up in the index by its facts, and only the waiters found there, and
// those that match every arrival, are checked against it and woken.
//
// The rule a waiter relies on: if an arrival satisfies the waiter's search,
// the arrival's facts satisfy the waiter's terms. The caller that builds both
// keeps it, and where it cannot be sure (a term its search compares in a way
// the facts cannot show) it leaves the term out: a Want with fewer terms
// wakes on more events, never on fewer. Wake-ups that are not about an event
// (Publish, PublishAll, an event that is not Complete) wake every waiter of
// the topic, whatever it waits for.

// Kind is how a Term compares its values with an event's facts.
type Kind uint8

// The kinds of Term.
const (
	Prefix   Kind = iota + 1 // the fact starts with the value
	Contains                 // the fact contains the value
	Equal                    // the fact is the value
)

// Term is one condition of a Want: it holds when some fact of the event with
// this Field matches one of Values by Kind. Values and facts are compared
// byte for byte: the caller folds case on both sides.
type Term struct {
	Field  string
	Kind   Kind
	Values []string
}

// Want is what a waiter waits for: an event of Topic on which every one of
// Terms holds. No terms: every event of Topic.
type Want struct {
	Topic string
	Terms []Term
}

// Fact is one value of one field of an arrival (one recipient, the subject).
// A field may have several facts.
type Fact struct {
	Field, Value string
}

// Event is one arrival on Topic. When Complete, Facts are every fact of it
// that a Want's terms may name, and the event wakes the waiters whose terms
// hold on them (and those that want every event). An event that is not
// Complete, as one announced by a replica that does not send facts, wakes
// every waiter of Topic.
type Event struct {
	Topic    string
	Facts    []Fact
	Complete bool
}

// gramLen is the length, in bytes, of the pieces of a Contains value that the
// index holds: a fact contains the value only if it contains each of them.
const gramLen = 3

// normal returns the terms of w that can fail: a term with an empty value, or
// no value, or of no known kind, is left out, as it would hold on anything
// (or is taken to: see above). Nil when none is left.
func (w Want) normal() []Term {
	var out []Term
terms:
	for _, t := range w.Terms {
		if len(t.Values) == 0 || t.Kind < Prefix || t.Kind > Equal {
			continue
		}
		for _, v := range t.Values {
			if v == "" {
				continue terms
			}
		}
		out = append(out, Term{Field: t.Field, Kind: t.Kind, Values: append([]string(nil), t.Values...)})
	}
	return out
}

// subKey is an entry of a topic's index: a whole prefix of a field's fact
// (Prefix and Equal terms), or a piece of gramLen bytes of it (Contains).
type subKey struct {
	gram  bool
	field string
	value string
}

type subSet map[*Subscription]struct{}

// topicSubs are the subscriptions of one topic.
type topicSubs struct {
	n     int
	subs  subSet // all of them
	every subSet // those with no terms: woken by every event
	scan  subSet // those with terms but no entry in the index: checked at every event
	index map[subKey]subSet
	// prefixLens counts, by field, the index's prefix entries of each length,
	// so that a fact is looked up at those lengths only.
	prefixLens map[string]map[int]int
	// gramFields counts, by field, the index's gram entries, so that the
	// grams of a fact no waiter looks for are not looked up.
	gramFields map[string]int
}

func newTopicSubs() *topicSubs {
	return &topicSubs{subs: subSet{}, every: subSet{}, scan: subSet{}, index: map[subKey]subSet{},
		prefixLens: map[string]map[int]int{}, gramFields: map[string]int{}}
}

func (ts *topicSubs) add(s *Subscription) {
	ts.n++
	ts.subs[s] = struct{}{}
	if s.terms == nil {
		ts.every[s] = struct{}{}
		return
	}
	s.keys = ts.keysFor(s.terms)
	if s.keys == nil {
		ts.scan[s] = struct{}{}
		return
	}
	for _, k := range s.keys {
		set := ts.index[k]
		if set == nil {
			set = subSet{}
			ts.index[k] = set
		}
		set[s] = struct{}{}
		if k.gram {
			ts.gramFields[k.field]++
			continue
		}
		lens := ts.prefixLens[k.field]
		if lens == nil {
			lens = map[int]int{}
			ts.prefixLens[k.field] = lens
		}
		lens[len(k.value)]++
	}
}

// keysFor chooses the term a subscription is indexed under and returns its
// entries, one per value; nil when no term can be indexed (a Contains value
// shorter than gramLen). A Prefix or Equal term is preferred: its entries are
// whole values, found by the facts' prefixes. A Contains value is entered
// under its piece of gramLen bytes that has the fewest subscriptions yet, so
// that waiters for values with a common part spread over their other parts.
func (ts *topicSubs) keysFor(terms []Term) []subKey {
	best := -1
	for i, t := range terms {
		if t.Kind == Prefix || t.Kind == Equal {
			best = i
			break
		}
	}
	if best < 0 {
		for i, t := range terms {
			if m := minLen(t.Values); m >= gramLen && (best < 0 || m > minLen(terms[best].Values)) {
				best = i
			}
		}
	}
	if best < 0 {
		return nil
	}
	t := terms[best]
	keys := make([]subKey, 0, len(t.Values))
	seen := map[subKey]bool{}
	for _, v := range t.Values {
		k := subKey{field: t.Field, value: v}
		if t.Kind == Contains {
			k = ts.leastUsedGram(t.Field, v)
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func minLen(vs []string) int {
	m := -1
	for _, v := range vs {
		if m < 0 || len(v) < m {
			m = len(v)
		}
	}
	return m
}

func (ts *topicSubs) leastUsedGram(field, v string) subKey {
	best, bestN := subKey{}, -1
	for i := 0; i+gramLen <= len(v); i++ {
		k := subKey{gram: true, field: field, value: v[i : i+gramLen]}
		if n := len(ts.index[k]); bestN < 0 || n < bestN {
			best, bestN = k, n
			if n == 0 {
				break
			}
		}
	}
	return best
}

func (ts *topicSubs) remove(s *Subscription) {
	if _, ok := ts.subs[s]; !ok {
		return
	}
	ts.n--
	delete(ts.subs, s)
	delete(ts.every, s)
	delete(ts.scan, s)
	for _, k := range s.keys {
		if set := ts.index[k]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(ts.index, k)
			}
		}
		if k.gram {
			if ts.gramFields[k.field]--; ts.gramFields[k.field] == 0 {
				delete(ts.gramFields, k.field)
			}
			continue
		}
		lens := ts.prefixLens[k.field]
		if lens[len(k.value)]--; lens[len(k.value)] == 0 {
			delete(lens, len(k.value))
			if len(lens) == 0 {
				delete(ts.prefixLens, k.field)
			}
		}
	}
	s.keys = nil
}

// each calls fn for every subscription of the topic.
func (ts *topicSubs) each(fn func(*Subscription)) {
	for s := range ts.subs {
		fn(s)
	}
}

// publish wakes the subscriptions an event with facts may satisfy: those
// that want every event, and those the index or the scan list yields whose
// terms hold on facts. gen marks a subscription once looked at.
func (ts *topicSubs) publish(facts []Fact, gen uint64) {
	for s := range ts.every {
		wake(s)
	}
	check := func(s *Subscription) {
		if s.seen == gen {
			return
		}
		s.seen = gen
		if holds(s.terms, facts) {
			wake(s)
		}
	}
	for s := range ts.scan {
		check(s)
	}
	if len(ts.index) == 0 {
		return
	}
	for _, f := range facts {
		for n := range ts.prefixLens[f.Field] {
			if n <= len(f.Value) {
				for s := range ts.index[subKey{field: f.Field, value: f.Value[:n]}] {
					check(s)
				}
			}
		}
		if ts.gramFields[f.Field] == 0 {
			continue
		}
		for i := 0; i+gramLen <= len(f.Value); i++ {
			for s := range ts.index[subKey{gram: true, field: f.Field, value: f.Value[i : i+gramLen]}] {
				check(s)
			}
		}
	}
}

// holds reports whether every term holds on facts.
func holds(terms []Term, facts []Fact) bool {
	for _, t := range terms {
		if !t.holds(facts) {
			return false
		}
	}
	return true
}

func (t Term) holds(facts []Fact) bool {
	for _, f := range facts {
		if f.Field != t.Field {
			continue
		}
		for _, v := range t.Values {
			switch t.Kind {
			case Prefix:
				if strings.HasPrefix(f.Value, v) {
					return true
				}
			case Contains:
				if strings.Contains(f.Value, v) {
					return true
				}
			case Equal:
				if f.Value == v {
					return true
				}
			}
		}
	}
	return false
}

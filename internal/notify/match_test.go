package notify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWatchWakesWhatMatches(t *testing.T) {
	ctx := context.Background()
	email := Event{Topic: "ns:1", Complete: true, Facts: []Fact{
		{"to", "order-42@alpha.example"}, {"to", "copy@alpha.example"},
		{"from", "shop@example.org"}, {"subject", "your password reset code"},
	}}
	for _, tc := range []struct {
		name  string
		want  Want
		woken bool
	}{
		{"every event", Want{Topic: "ns:1"}, true},
		{"other topic", Want{Topic: "ns:2"}, false},
		{"prefix of the first recipient", Want{"ns:1", []Term{{"to", Prefix, []string{"order-4"}}}}, true},
		{"prefix of a copy", Want{"ns:1", []Term{{"to", Prefix, []string{"copy@"}}}}, true},
		{"whole address", Want{"ns:1", []Term{{"to", Prefix, []string{"order-42@alpha.example"}}}}, true},
		{"longer than the address", Want{"ns:1", []Term{{"to", Prefix, []string{"order-42@alpha.example.org"}}}}, false},
		{"other prefix", Want{"ns:1", []Term{{"to", Prefix, []string{"order-43"}}}}, false},
		{"prefix, one of two", Want{"ns:1", []Term{{"to", Prefix, []string{"nobody", "copy"}}}}, true},
		{"subject word", Want{"ns:1", []Term{{"subject", Contains, []string{"password reset"}}}}, true},
		{"subject, two letters", Want{"ns:1", []Term{{"subject", Contains, []string{"co"}}}}, true},
		{"subject, two letters absent", Want{"ns:1", []Term{{"subject", Contains, []string{"zq"}}}}, false},
		{"subject absent", Want{"ns:1", []Term{{"subject", Contains, []string{"invoice"}}}}, false},
		{"sender", Want{"ns:1", []Term{{"from", Contains, []string{"shop@"}}}}, true},
		{"sender's subject word", Want{"ns:1", []Term{{"from", Contains, []string{"password"}}}}, false},
		{"all terms hold", Want{"ns:1", []Term{{"to", Prefix, []string{"order"}}, {"subject", Contains, []string{"code"}}}}, true},
		{"one term fails", Want{"ns:1", []Term{{"to", Prefix, []string{"order"}}, {"subject", Contains, []string{"invoice"}}}}, false},
		{"equal", Want{"ns:1", []Term{{"from", Equal, []string{"shop@example.org"}}}}, true},
		{"equal is not prefix", Want{"ns:1", []Term{{"from", Equal, []string{"shop@example"}}}}, false},
		{"an empty value holds on anything", Want{"ns:1", []Term{{"to", Prefix, []string{"", "zzz"}}}}, true},
		{"a field the event lacks", Want{"ns:1", []Term{{"body", Contains, []string{"code"}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHub()
			s := h.Watch(tc.want)
			defer s.Close()
			h.PublishEvents(ctx, email)
			if got := pending(s); got != tc.woken {
				t.Fatalf("woken %v, want %v", got, tc.woken)
			}
			// A wake-up that is not about an event wakes every waiter of the topic.
			h.Publish(ctx, "ns:1")
			if got := pending(s); got != (tc.want.Topic == "ns:1") {
				t.Fatalf("woken by Publish %v", got)
			}
			h.PublishEvents(ctx, Event{Topic: "ns:1"})
			if got := pending(s); got != (tc.want.Topic == "ns:1") {
				t.Fatalf("woken by an event that is not Complete %v", got)
			}
		})
	}
}

// TestIndexMissesNothing checks the index against the rule itself: many
// waiters with random terms over a small alphabet (so that values share
// prefixes and pieces), random events, and every waiter whose terms hold on
// an event, and only those, is woken by it. Waiters come and go between
// events, so the index's removals are checked too.
func TestIndexMissesNothing(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(min, max int) string {
		n := min + rng.IntN(max-min+1)
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc.@"[rng.IntN(5)]
		}
		return string(b)
	}
	fields := []string{"to", "from", "subject"}
	randomWant := func() Want {
		var terms []Term
		for range rng.IntN(3) {
			term := Term{Field: fields[rng.IntN(3)], Kind: Kind(1 + rng.IntN(3))}
			for range 1 + rng.IntN(2) {
				term.Values = append(term.Values, word(1, 6))
			}
			terms = append(terms, term)
		}
		return Want{Topic: "t", Terms: terms}
	}
	h := NewHub()
	subs := map[*Subscription]Want{}
	for round := range 400 {
		for range 10 {
			w := randomWant()
			subs[h.Watch(w)] = w
		}
		for s := range subs {
			if rng.IntN(4) == 0 {
				s.Close()
				delete(subs, s)
			}
		}
		var e Event
		e.Topic, e.Complete = "t", true
		for range rng.IntN(5) {
			e.Facts = append(e.Facts, Fact{fields[rng.IntN(3)], word(0, 12)})
		}
		h.PublishEvents(ctx, e)
		for s, w := range subs {
			want := holds(w.normal(), e.Facts)
			if got := pending(s); got != want {
				t.Fatalf("round %d: %+v woken %v by %+v, want %v", round, w.Terms, got, e.Facts, want)
			}
		}
	}
	for s := range subs {
		s.Close()
	}
	if n := h.Waiters(); n != 0 {
		t.Fatalf("%d waiters left", n)
	}
	if len(h.topics) != 0 {
		t.Fatalf("topics left after every waiter closed: %d", len(h.topics))
	}
}

// TestEventsTravelWhole: what a replica announces, another decodes to the
// same events; an event too long for a payload, and one that is not
// Complete, travel as their topic alone.
func TestEventsTravelWhole(t *testing.T) {
	p := &Postgres{replica: "r1"}
	events := []Event{
		{Topic: "ns:a", Complete: true, Facts: []Fact{{"to", "x y@z"}, {"to", "q&r=s?t%u+v"}, {"subject", "hello world ✓"}}},
		{Topic: "ns:b", Complete: true, Facts: []Fact{{"subject", strings.Repeat("long ", 500)}}},
		{Topic: "ns:c"},
		{Topic: "ns:c", Complete: true, Facts: []Fact{{"to", "c@c"}}},
		{Topic: "ns:d", Complete: true},
	}
	var got []Event
	for _, pl := range p.payloads(events) {
		sender, rest, _ := strings.Cut(pl, " ")
		if sender != "r1" {
			t.Fatalf("payload from %q", sender)
		}
		got = append(got, decodeEvents(strings.Fields(rest))...)
	}
	want := []Event{
		events[0],
		{Topic: "ns:b"},
		{Topic: "ns:c"},
		{Topic: "ns:d", Complete: true},
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Fatalf("decoded %+v\nwant    %+v", got, want)
	}
}

func sorted(events []Event) []Event {
	out := make([]Event, len(events))
	for i, e := range events {
		facts := append([]Fact(nil), e.Facts...)
		for a := range facts {
			for b := a + 1; b < len(facts); b++ {
				if facts[b].Field+"\x00"+facts[b].Value < facts[a].Field+"\x00"+facts[a].Value {
					facts[a], facts[b] = facts[b], facts[a]
				}
			}
		}
		out[i] = Event{Topic: e.Topic, Facts: facts, Complete: e.Complete}
	}
	return out
}

// BenchmarkPublishAndAnnounce is what an email costs the writer beyond the
// topic-wide wake-up it had before: building its announcement's payload, and
// looking up its facts among 1,000 held searches on distinct prefixes.
func BenchmarkPublishAndAnnounce(b *testing.B) {
	p := &Postgres{Hub: NewHub(), replica: "r1"}
	for i := range 1000 {
		p.Watch(Want{Topic: "ns:1", Terms: []Term{{"to", Prefix, []string{fmt.Sprintf("user%04d@", i)}}}})
	}
	e := Event{Topic: "ns:0123456789abcdef0123456789abcdef", Complete: true, Facts: []Fact{
		{"to", "user0042@default.localhost"}, {"from", "bench@bench.localhost"}, {"subject", "bench-abcdef-000042"}}}
	e1 := e
	e1.Topic = "ns:1"
	b.Run("payload", func(b *testing.B) {
		for b.Loop() {
			p.payloads([]Event{e})
		}
	})
	b.Run("publish", func(b *testing.B) {
		for b.Loop() {
			p.PublishEvents(context.Background(), e1)
		}
	})
}

// Package notify wakes requests that wait for something to arrive (inbox and SMS
// searches with wait=true). A waiter subscribes to a topic before it looks, so an
// arrival between the look and the wait is never missed; a writer names the
// topics whose data it stores.
//
// A waiter may also say what it waits for (a Want: terms on the fields of an
// arrival, such as a recipient prefix or a word of the subject), and a writer
// may say what arrived (an Event with its facts). The hub keeps such waiters
// in an index by one of their terms, so an arrival wakes only the waiters it
// may satisfy instead of every waiter of its topic (match.go).
//
// Hub is the in-process notifier. The PostgreSQL store adds cross-replica wake-ups
// on top of it with LISTEN/NOTIFY.
package notify

import (
	"context"
	"sync"

	"github.com/catchbox/catchbox/internal/store"
)

// Notifier delivers wake-ups for topics. A writer announces the topics in the
// transaction that stores their data, which wakes the other replicas when the
// transaction commits and never if it rolls back, and publishes them once the
// data is durable, which wakes this process's waiters.
type Notifier interface {
	// Subscribe returns a subscription whose channel receives a value after each
	// Publish of the topic (coalesced: one pending wake-up at most).
	Subscribe(topic string) *Subscription
	// Watch returns a subscription to w.Topic woken only by the events
	// w.Terms may match (and by every topic-wide wake-up): see Want.
	Watch(w Want) *Subscription
	// Announce adds to tx the wake-up of the topics' waiters on the other
	// replicas. With no other replica it does nothing.
	Announce(ctx context.Context, tx *store.Tx, topics ...string) error
	// AnnounceEvents is Announce for events: the other replicas wake the
	// waiters each event may satisfy.
	AnnounceEvents(ctx context.Context, tx *store.Tx, events ...Event) error
	// Publish wakes this process's subscribers of the topics, every one of
	// them whatever it waits for. It never blocks on a subscriber.
	Publish(ctx context.Context, topics ...string)
	// PublishEvents wakes this process's subscribers that each event may
	// satisfy. It never blocks on a subscriber.
	PublishEvents(ctx context.Context, events ...Event)
}

// Subscription is one waiter's interest in one topic.
type Subscription struct {
	C      <-chan struct{}
	c      chan struct{}
	topic  string
	hub    *Hub
	closed bool

	// Set by the hub under its lock (match.go).
	terms []Term   // nil: woken by every event of the topic
	keys  []subKey // where the index holds it
	seen  uint64   // the last publication that looked at it
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() { s.hub.unsubscribe(s) }

// Hub is an in-process Notifier.
type Hub struct {
	mu     sync.Mutex
	topics map[string]*topicSubs
	n      int    // open subscriptions
	gen    uint64 // publications, to look at each candidate once per event
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{topics: map[string]*topicSubs{}} }

// Subscribe implements Notifier.
func (h *Hub) Subscribe(topic string) *Subscription { return h.Watch(Want{Topic: topic}) }

// Watch implements Notifier.
func (h *Hub) Watch(w Want) *Subscription {
	c := make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, topic: w.Topic, hub: h, terms: w.normal()}
	h.mu.Lock()
	ts := h.topics[w.Topic]
	if ts == nil {
		ts = newTopicSubs()
		h.topics[w.Topic] = ts
	}
	ts.add(s)
	h.n++
	h.mu.Unlock()
	return s
}

func (h *Hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	h.n--
	if ts := h.topics[s.topic]; ts != nil {
		ts.remove(s)
		if ts.n == 0 {
			delete(h.topics, s.topic)
		}
	}
}

// Announce implements Notifier: a hub has no other replica to tell.
func (h *Hub) Announce(context.Context, *store.Tx, ...string) error { return nil }

// AnnounceEvents implements Notifier: a hub has no other replica to tell.
func (h *Hub) AnnounceEvents(context.Context, *store.Tx, ...Event) error { return nil }

// Publish implements Notifier.
func (h *Hub) Publish(_ context.Context, topics ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		if ts := h.topics[t]; ts != nil {
			ts.each(wake)
		}
	}
}

// PublishEvents implements Notifier.
func (h *Hub) PublishEvents(_ context.Context, events ...Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		ts := h.topics[e.Topic]
		if ts == nil {
			continue
		}
		if !e.Complete {
			ts.each(wake)
			continue
		}
		h.gen++
		ts.publish(e.Facts, h.gen)
	}
}

// PublishAll wakes every subscriber of every topic.
func (h *Hub) PublishAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ts := range h.topics {
		ts.each(wake)
	}
}

// Waiters is the number of open subscriptions (for metrics and tests).
func (h *Hub) Waiters() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// wake gives s a pending wake-up, unless it has one.
func wake(s *Subscription) {
	select {
	case s.c <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Package notify wakes requests that wait for something to arrive (inbox and SMS
// searches with wait=true). A waiter subscribes to a topic before it looks, so an
// arrival between the look and the wait is never missed; a writer names the
// topics whose data it stores.
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
	// Announce adds to tx the wake-up of the topics' waiters on the other
	// replicas. With no other replica it does nothing.
	Announce(ctx context.Context, tx *store.Tx, topics ...string) error
	// Publish wakes this process's subscribers of the topics. It never blocks
	// on a subscriber.
	Publish(ctx context.Context, topics ...string)
}

// Subscription is one waiter's interest in one topic.
type Subscription struct {
	C      <-chan struct{}
	c      chan struct{}
	topic  string
	hub    *Hub
	closed bool
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() { s.hub.unsubscribe(s) }

// Hub is an in-process Notifier.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]map[*Subscription]struct{}{}} }

// Subscribe implements Notifier.
func (h *Hub) Subscribe(topic string) *Subscription {
	c := make(chan struct{}, 1)
	s := &Subscription{C: c, c: c, topic: topic, hub: h}
	h.mu.Lock()
	m := h.subs[topic]
	if m == nil {
		m = map[*Subscription]struct{}{}
		h.subs[topic] = m
	}
	m[s] = struct{}{}
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
	if m := h.subs[s.topic]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.topic)
		}
	}
}

// Announce implements Notifier: a hub has no other replica to tell.
func (h *Hub) Announce(context.Context, *store.Tx, ...string) error { return nil }

// Publish implements Notifier.
func (h *Hub) Publish(_ context.Context, topics ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range topics {
		for s := range h.subs[t] {
			select {
			case s.c <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// PublishAll wakes every subscriber of every topic.
func (h *Hub) PublishAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			select {
			case s.c <- struct{}{}:
			default:
			}
		}
	}
}

// Waiters is the number of open subscriptions (for metrics and tests).
func (h *Hub) Waiters() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.subs {
		n += len(m)
	}
	return n
}

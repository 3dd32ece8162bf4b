package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
)

// Server-sent events for the live pages (WHATWG HTML, "Server-sent events").
// A page subscribes to the notify topic the API's wait uses, so new mail
// shows the moment its transaction commits, on whichever replica took it. An
// event carries nothing but its name: the page fetches what changed through
// the same handlers as a reload, so what it shows is always what a reload
// would.
const (
	// liveFor bounds one event stream; the browser reconnects by itself.
	liveFor = 10 * time.Minute
	// keepAlive is how often a quiet stream sends a comment, so that proxies
	// do not take it for dead.
	keepAlive = 25 * time.Second
	// degradedRecheck is how often a stream asks whether wake-ups may be lost.
	degradedRecheck = 2 * time.Second
)

// stream sends an event named name whenever topic is published, until the
// client leaves or liveFor passes.
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request, topic, name string) error {
	sub := d.Notifier.Subscribe(topic)
	defer sub.Close()
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(liveFor + time.Minute))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n: live\n\n")
	if err := rc.Flush(); err != nil {
		return nil
	}
	end := time.NewTimer(liveFor)
	defer end.Stop()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	// While cross-replica wake-ups may be lost (PostgreSQL's listener is
	// down), the page is told to look again every few seconds instead.
	var recheck <-chan time.Time
	if d.Inbox != nil && d.Inbox.Degraded != nil {
		t := time.NewTicker(degradedRecheck)
		defer t.Stop()
		recheck = t.C
	}
	for {
		select {
		case <-recheck:
			if !d.Inbox.Degraded() {
				continue
			}
			fmt.Fprintf(w, "event: %s\ndata: {}\n\n", name)
		case <-r.Context().Done():
			return nil
		case <-end.C:
			return nil
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-sub.C:
			fmt.Fprintf(w, "event: %s\ndata: {}\n\n", name)
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// EventsHandler answers GET /inboxes/{namespace}/events: an event "mail"
// each time mail lands in the namespace.
func (d *Dashboard) EventsHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.namespaceParam(r)
	if err != nil {
		return err
	}
	return d.stream(w, r, inbox.NamespaceTopic(n.ID), "mail")
}

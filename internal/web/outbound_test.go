package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// The send, reply and forward forms show the operations' refusals: every
// invalid field at once, with the status the API answers, and nothing sent.
func TestOutboundFormRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/outbound/send", url.Values{"namespace": {"default"}, "from": {""}, "to": {"john, jane@default.localhost"}, "subject": {" "}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("send with invalid fields: %d %s", p.status, p.body)
		}
		mustContain(t, p, "from.email must be an email address", "to[0] must be an email address, not", "subject is required", "html or text is required")
		p = b.post("/outbound/send", url.Values{"namespace": {"nope"}, "from": {"app@default.localhost"}, "to": {"jane@default.localhost"},
			"subject": {"s"}, "text": {"t"}})
		if p.status != http.StatusNotFound {
			t.Fatalf("send from an unknown namespace: %d %s", p.status, p.body)
		}

		id := e.deliver("default", "From: colleague@default.localhost\nTo: someone@default.localhost\nSubject: Please reply\n\nhi\n")
		p = b.post("/emails/"+id+"/reply", url.Values{"from": {"reply@default.localhost"}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("reply without text: %d %s", p.status, p.body)
		}
		mustContain(t, p, "html or text is required")
		p = b.post("/emails/"+id+"/forward", url.Values{"from": {"fwd@default.localhost"}, "to": {"stranger@example.com"}})
		if p.status != http.StatusForbidden {
			t.Fatalf("forward to an unverified address: %d %s", p.status, p.body)
		}
		mustContain(t, p, "namespace default")
		mustLack(t, b.get("/outbound"), "Please reply")
	})
}

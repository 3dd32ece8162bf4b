package inbox_test

import (
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// EmailAddress.name is left out when the header gives none, or an empty or
// blank one: never "" (docs/api.md, decisions).
func TestEmptyDisplayNameLeftOut(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newEnv(t, db)
	id := e.deliver(e.ns, msg{from: `"" <alice@example.com>`, to: `"  " <x@default.localhost>, Named <y@default.localhost>, z@default.localhost`,
		cc: `=?utf-8?q??= <c@default.localhost>`, subject: "names", body: "x", rcpts: []string{"x@default.localhost"}})
	body := e.raw("/api/emails/" + id)
	if strings.Contains(body, `"name":""`) || strings.Contains(body, `"name":null`) {
		t.Errorf("an empty display name is in the answer: %s", body)
	}
	for _, want := range []string{`"from":{"address":"alice@example.com"}`, `{"address":"x@default.localhost"}`,
		`{"address":"y@default.localhost","name":"Named"}`, `{"address":"z@default.localhost"}`, `"cc":[{"address":"c@default.localhost"}]`} {
		if !strings.Contains(body, want) {
			t.Errorf("answer lacks %s: %s", want, body)
		}
	}
}

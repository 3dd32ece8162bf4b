package sms_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestLinksAndCodes checks that the virtual SMS answer, the latest message and a
// search give a message's links and codes, and empty arrays when it has none.
func TestLinksAndCodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		type found struct {
			Links []struct{ Href, Text string } `json:"links"`
			Codes []string                      `json:"codes"`
		}
		check := func(where string, f found) {
			t.Helper()
			if len(f.Links) != 1 || f.Links[0].Href != "https://app.example/m/Kx81" || len(f.Codes) != 1 || f.Codes[0] != "482913" {
				t.Errorf("%s: %+v", where, f)
			}
		}
		var created struct{ Data found }
		e.do(http.MethodPost, e.key, "/api/sms/virtual", map[string]string{"from_number": "+447700900999", "to_number": activePhone,
			"body": "G-482913 is your verification code. Or sign in at https://app.example/m/Kx81."}, &created)
		check("created", created.Data)
		var latest struct{ Data found }
		e.get(e.key, "/api/sms/"+activePhone+"/latest", &latest)
		check("latest", latest.Data)
		var page struct{ Data []found }
		e.get(e.key, "/api/sms/"+activePhone+"/messages?body=verification", &page)
		if len(page.Data) != 1 {
			t.Fatalf("search: %+v", page)
		}
		check("search", page.Data[0])

		e.virtual("+447700900999", activePhone, "See you at 10")
		var raw struct{ Data map[string]json.RawMessage }
		e.get(e.key, "/api/sms/"+activePhone+"/latest", &raw)
		if string(raw.Data["links"]) != "[]" || string(raw.Data["codes"]) != "[]" {
			t.Errorf("message without links: links %s, codes %s", raw.Data["links"], raw.Data["codes"])
		}
	})
}

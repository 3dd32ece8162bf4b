package inbox_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// signUpMail is a multipart sign-up mail with a link and a code, quoted-printable.
const signUpMail = "MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour verification code is 482913.\r\n" +
	"Or confirm: https://app.example/confirm?t=abc\r\n" +
	"--b\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
	"<p>Your verification code is <b>482913</b>.</p><p><a href=3D\"https://app.example/con=\r\nfirm?t=3Dabc\">Confirm</a></p>\r\n--b--\r\n"

// TestLinksAndCodes checks that every way of reading an email answers its links
// and codes, read at ingest, and an email without either answers empty arrays.
func TestLinksAndCodes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		plain := e.deliver(e.ns, msg{from: "a@example.com", to: "x@default.localhost", subject: "plain", body: "nothing to follow"})
		id := e.deliver(e.ns, msg{from: "a@example.com", to: "x@default.localhost", subject: "Welcome", extra: signUpMail})
		wantLinks := []inbox.Link{{Href: "https://app.example/confirm?t=abc", Text: "Confirm"}}
		check := func(where string, got inbox.Email) {
			t.Helper()
			if !slices.Equal(got.Links, wantLinks) || !slices.Equal(got.Codes, []string{"482913"}) {
				t.Errorf("%s: links %+v, codes %q", where, got.Links, got.Codes)
			}
		}
		var one struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &one)
		check("by id", one.Data)
		e.get(e.key, "/api/emails/default/latest", &one)
		check("latest", one.Data)
		var page searchResp
		e.get(e.key, "/api/emails/default/inbox?subject_includes=welcome", &page)
		if len(page.Data) != 1 {
			t.Fatalf("search: %+v", page)
		}
		check("search", page.Data[0])

		// Present and empty, not left out, when there are none.
		var raw struct{ Data map[string]json.RawMessage }
		e.get(e.key, "/api/emails/"+plain, &raw)
		if string(raw.Data["links"]) != "[]" || string(raw.Data["codes"]) != "[]" {
			t.Errorf("email without links: links %s, codes %s", raw.Data["links"], raw.Data["codes"])
		}
	})
}

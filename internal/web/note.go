package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/catchbox/catchbox/internal/tenant"
)

// A one-shot note is what a form's answer has to tell the page it redirects
// to: a message ("Created inbox signup."), a new API key to copy, a share
// link. It travels in a short-lived cookie sealed with the server key
// (AES-GCM), never in the address, so that
//   - no page shows text taken from its URL: a link cannot make the dashboard
//     say anything (a phishing aid) nor put a key on the page;
//   - a reload does not show it again: the page that reads it deletes it;
//   - it works on any replica, since every replica has the key.
//
// A note with a key or a share link is bound to the session that asked for it
// (the session token is the sealing's associated data): planted in another
// browser, even one signed in to the same service, it does not open. A note
// with a message only is not bound, so that "You are signed out." reaches the
// signed-out page; it says nothing the server did not write.
type note struct {
	Message string `json:"m,omitempty"`
	Key     string `json:"k,omitempty"` // a new API key, shown this once
	KeyID   string `json:"i,omitempty"`
	Share   string `json:"s,omitempty"` // a share link of email EmailID
	EmailID string `json:"e,omitempty"`
	Expires int64  `json:"x"` // Unix seconds
}

// noteCookie is the name of the one-shot note's cookie.
const noteCookie = "catchbox_note"

// noteTTL is how long a note waits for the page it is for: the redirect is
// followed at once, so a minute is plenty.
const noteTTL = time.Minute

// bound reports whether the note carries something for its session only.
func (n note) bound() bool { return n.Key != "" || n.Share != "" }

// sessionToken is the request's session cookie value, "" without one.
func sessionToken(r *http.Request) string {
	if c, err := r.Cookie(tenant.SessionCookie); err == nil {
		return c.Value
	}
	return ""
}

// setNote leaves n for the next page the browser shows.
func (d *Dashboard) setNote(w http.ResponseWriter, r *http.Request, n note) {
	n.Expires = d.now().Add(noteTTL).Unix()
	plain, _ := json.Marshal(n)
	ad := ""
	if n.bound() {
		ad = sessionToken(r)
	}
	sealed := d.notes.Seal(plain, []byte(ad))
	http.SetCookie(w, &http.Cookie{Name: noteCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/",
		MaxAge: int(noteTTL / time.Second), HttpOnly: true, Secure: d.Sessions.Secure || r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// takeNote reads and deletes the request's note: the zero note when there is
// none, or it does not open (damaged, planted, another server's), or it has
// expired.
func (d *Dashboard) takeNote(w http.ResponseWriter, r *http.Request) note {
	c, err := r.Cookie(noteCookie)
	if err != nil {
		return note{}
	}
	http.SetCookie(w, &http.Cookie{Name: noteCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: d.Sessions.Secure || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || len(sealed) > 8<<10 {
		return note{}
	}
	var n note
	for _, ad := range []string{sessionToken(r), ""} {
		plain, err := d.notes.Open(sealed, []byte(ad))
		if err != nil {
			continue
		}
		if json.Unmarshal(plain, &n) != nil || n.bound() != (ad != "") || d.now().Unix() > n.Expires {
			return note{}
		}
		return n
	}
	return note{}
}

// isNavigation reports whether the request loads a page in a tab or window
// (not a script's fetch of rows, an event stream or the email's frame), which
// is the request a note is for. Browsers without Sec-Fetch-Dest count every
// request as one.
func isNavigation(r *http.Request) bool {
	dest := r.Header.Get("Sec-Fetch-Dest")
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (dest == "" || dest == "document")
}

type noteKey struct{}

func withNote(ctx context.Context, n note) context.Context {
	return context.WithValue(ctx, noteKey{}, n)
}

// noteFrom is the note the page shows, the zero note when none.
func noteFrom(ctx context.Context) note {
	n, _ := ctx.Value(noteKey{}).(note)
	return n
}

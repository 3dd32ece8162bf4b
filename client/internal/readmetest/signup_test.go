package signup_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strconv"
	"testing"

	"github.com/catchbox/catchbox/client"
	"github.com/catchbox/catchbox/client/catchboxtest"
)

// TestSignUpConfirmation signs a user up, waits for the confirmation mail and
// follows its link. It needs a running server: CATCHBOX_URL, CATCHBOX_API_KEY.
func TestSignUpConfirmation(t *testing.T) {
	// The service under test. Yours sends the mail itself; this one only
	// confirms the token its link carries.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "s3cr3t" {
			http.Error(w, "bad token", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "address confirmed")
	}))
	defer app.Close()

	inbox := catchboxtest.Inbox(t) // a fresh namespace for this test
	alice := inbox.Address("alice")

	// The sign-up mail, sent over SMTP as your service would send it.
	s := inbox.SMTP()
	mail := "From: no-reply@app.example\r\nTo: " + alice + "\r\nSubject: Confirm your address\r\n" +
		"Content-Type: text/html\r\n\r\n" +
		`<p>Welcome! <a href="` + app.URL + `/confirm?token=s3cr3t">Confirm your address</a></p>` + "\r\n"
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	if err := smtp.SendMail(addr, nil, "no-reply@app.example", []string{alice}, []byte(mail)); err != nil {
		t.Fatal(err)
	}

	// Wait for it (the test fails after a minute without it), then follow its link.
	got := inbox.WaitForEmail(client.Filter{To: alice, Subject: "Confirm"})
	if len(got.Links) == 0 {
		t.Fatalf("no link in %q", got.Subject)
	}
	resp, err := http.Get(got.Links[0].Href)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "address confirmed" {
		t.Fatalf("following %s: %s %q", got.Links[0].Href, resp.Status, body)
	}
}

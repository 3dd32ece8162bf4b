package compose_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/outbound/compose"
)

func TestSubjects(t *testing.T) {
	long := strings.Repeat("é", compose.MaxSubject)
	for _, c := range []struct{ got, want string }{
		{compose.ReplySubject("Quarterly numbers"), "Re: Quarterly numbers"},
		{compose.ReplySubject("  RE: Quarterly numbers "), "RE: Quarterly numbers"},
		{compose.ForwardSubject("Invoice"), "Fwd: Invoice"},
		{compose.ForwardSubject("FW: Invoice"), "FW: Invoice"},
		{compose.ForwardSubject("fwd: Invoice"), "fwd: Invoice"},
		{compose.ReplySubject(long), "Re: " + strings.Repeat("é", compose.MaxSubject-4)},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// Threading follows RFC 5322 section 3.6.4: In-Reply-To names the message
// replied to, References its references and then it, the first and the
// latest kept when there are too many.
func TestThreading(t *testing.T) {
	var many []string
	for i := range 30 {
		many = append(many, fmt.Sprintf("r%d@x", i))
	}
	for _, c := range []struct {
		name            string
		h               map[string]string
		inReplyTo, refs []string
	}{
		{"references", map[string]string{"message-id": "<m@x>", "references": "<a@x> <b@x>"}, []string{"m@x"}, []string{"a@x", "b@x", "m@x"}},
		{"in-reply-to alone", map[string]string{"message-id": "<m@x>", "in-reply-to": "<a@x>"}, []string{"m@x"}, []string{"a@x", "m@x"}},
		{"no message-id", map[string]string{"references": "<a@x>"}, nil, []string{"a@x"}},
		{"a long thread", map[string]string{"message-id": "<m@x>", "references": "<" + strings.Join(many, "> <") + ">"},
			[]string{"m@x"}, append(append([]string{"r0@x"}, many[30-18:]...), "m@x")},
	} {
		irt, refs := compose.Threading(c.h)
		if !slices.Equal(irt, c.inReplyTo) || !slices.Equal(refs, c.refs) {
			t.Errorf("%s: %q %q, want %q %q", c.name, irt, refs, c.inReplyTo, c.refs)
		}
	}
}

// A reply goes to the Reply-To, else the From.
func TestReplyRecipients(t *testing.T) {
	withReplyTo := inbox.Email{From: inbox.Address{Address: "a@x.org"},
		Headers: map[string]string{"reply-to": `"Billing, Shop" <billing@x.org>, accounts@x.org`}}
	if got := compose.ReplyRecipients(withReplyTo); !slices.Equal(got, []compose.Address{{Email: "billing@x.org", Name: "Billing, Shop"}, {Email: "accounts@x.org"}}) {
		t.Errorf("with Reply-To: %+v", got)
	}
	if got := compose.ReplyRecipients(inbox.Email{From: inbox.Address{Address: "a@x.org", Name: "A"}}); !slices.Equal(got, []compose.Address{{Email: "a@x.org", Name: "A"}}) {
		t.Errorf("from From: %+v", got)
	}
	if got := compose.ReplyRecipients(inbox.Email{From: inbox.Address{Address: "not an address"}}); got != nil {
		t.Errorf("no address: %+v", got)
	}
}

// Build writes the least structure that holds the content, and
// internal/message reads back what went in.
func TestBuild(t *testing.T) {
	m := compose.Message{MessageID: "id1@localhost", Date: time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC),
		From: compose.Address{Email: "app@ns.localhost", Name: "Zoë"}, To: []compose.Address{{Email: "jane@ns.localhost"}},
		Subject: "Rapport — données", InReplyTo: []string{"q@x"}, References: []string{"a@x", "q@x"},
		HTML: `<p>see <img src="cid:logo@x"></p>`, Text: "see the logo",
		Attachments: []compose.Attachment{
			{Filename: "logo.png", ContentType: "image/png", ContentID: "logo@x", Inline: true, Data: []byte("\x89PNG")},
			{Filename: "relevé.pdf", ContentType: "application/pdf", Data: []byte("%PDF\x00\xff")},
		}}
	raw, err := compose.Build(m)
	if err != nil {
		t.Fatal(err)
	}
	root, ok := message.Tree(raw)
	if !ok {
		t.Fatal("not MIME")
	}
	var shape func(p message.Part) string
	shape = func(p message.Part) string {
		var parts []string
		for _, c := range p.Parts() {
			parts = append(parts, shape(c))
		}
		if parts == nil {
			return p.MediaType()
		}
		return p.MediaType() + "[" + strings.Join(parts, ",") + "]"
	}
	if got := shape(root); got != "multipart/mixed[multipart/related[multipart/alternative[text/plain,text/html],image/png],application/pdf]" {
		t.Errorf("structure %s", got)
	}
	if root.Get("Message-Id") != "<id1@localhost>" || root.Get("In-Reply-To") != "<q@x>" || root.Get("References") != "<a@x> <q@x>" {
		t.Errorf("threading %q %q %q", root.Get("Message-Id"), root.Get("In-Reply-To"), root.Get("References"))
	}
	p := message.Parse(raw)
	if p.Subject != m.Subject || p.From != (message.Address{Address: "app@ns.localhost", Name: "Zoë"}) || p.Text != m.Text || p.HTML != m.HTML ||
		len(p.Attachments) != 2 || p.Attachments[1].Filename != "relevé.pdf" || !bytes.Equal(p.Attachments[1].Data, m.Attachments[1].Data) ||
		!p.Attachments[0].Inline || p.Attachments[0].ContentID != "logo@x" {
		t.Errorf("read back %+v", p)
	}

	blind, err := compose.Build(compose.Message{MessageID: "id2@localhost", From: m.From, Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := message.Tree(blind); r.Get("To") != "undisclosed-recipients:;" || r.MediaType() != "text/plain" {
		t.Errorf("blind copies only: To %q, %s", r.Get("To"), r.MediaType())
	}
}

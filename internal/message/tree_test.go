package message

import (
	"slices"
	"testing"
)

// Tree gives the structure Parse flattens: each part's media type and
// parameters, its header fields, its parts, and a leaf's body with its
// transfer encoding undone.
func TestTree(t *testing.T) {
	raw := "Message-ID: <r1@mx.example.org>\r\nReceived: from a\r\nReceived: from b\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status;\r\n boundary=\"outer\"\r\n\r\n" +
		"preamble\r\n--outer\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n" +
		"--outer\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		"RmluYWwtUmVjaXBpZW50OiByZmM4MjI7IG1hcnlAZXhhbXBsZS5vcmcNCg==\r\n" +
		"--outer\r\nContent-Type: multipart/mixed; boundary=inner\r\n\r\n--inner\r\n\r\nno type\r\n--inner--\r\n" +
		"--outer--\r\n"
	root, ok := Tree([]byte(raw))
	if !ok {
		t.Fatal("not read as MIME")
	}
	if root.MediaType() != "multipart/report" || root.Param("report-type") != "delivery-status" || root.Param("boundary") != "outer" {
		t.Errorf("root %q %q", root.MediaType(), root.Param("report-type"))
	}
	if root.Get("message-id") != "<r1@mx.example.org>" || !slices.Equal(root.Values("RECEIVED"), []string{"from a", "from b"}) ||
		root.Get("Subject") != "" || root.Values("Subject") != nil {
		t.Errorf("header: %q %q", root.Get("message-id"), root.Values("RECEIVED"))
	}
	parts := root.Parts()
	if len(parts) != 3 || root.Body() != nil {
		t.Fatalf("%d parts, body %q", len(parts), root.Body())
	}
	if parts[0].MediaType() != "text/plain" || string(parts[0].Body()) != "Your message could not be delivered." || parts[0].Parts() != nil {
		t.Errorf("first part %q %q", parts[0].MediaType(), parts[0].Body())
	}
	if parts[1].MediaType() != "message/delivery-status" || string(parts[1].Body()) != "Final-Recipient: rfc822; mary@example.org\r\n" {
		t.Errorf("second part %q %q", parts[1].MediaType(), parts[1].Body())
	}
	inner := parts[2].Parts()
	if parts[2].MediaType() != "multipart/mixed" || len(inner) != 1 || inner[0].MediaType() != "" || string(inner[0].Body()) != "no type" {
		t.Errorf("nested multipart %q %d", parts[2].MediaType(), len(inner))
	}
	for _, bad := range []string{" folded first line\r\n\r\nbody", "Content-Type: multipart/mixed\r\n\r\nno boundary"} {
		if _, ok := Tree([]byte(bad)); ok {
			t.Errorf("%q read as MIME", bad)
		}
	}
}

package routing

import (
	"crypto/hmac"
	"strings"

	"github.com/catchbox/catchbox/internal/secret"
)

// Return paths. Outbound mail leaves with a per-message envelope sender on the
// bare mail domain, bounce+<message id>.<tag>@<mail domain>, so that delivery
// status notifications and feedback reports sent back for it arrive here and
// name the message they concern. The tag is a keyed hash of the id: a stranger
// who learns one message id cannot forge bounces for it, and a return path
// cannot be made up for a message that was never sent. The local part is lower
// case and at most 64 octets (RFC 5321 section 4.5.3.1.1), so relays that fold
// case or check lengths keep it intact.

const (
	returnPrefix  = "bounce+"
	returnPurpose = "return-path"
	returnTagLen  = 8 // bytes of the keyed hash, 16 hex digits
)

// ReturnPath is the envelope sender (MAIL FROM) of outbound message id.
func (r *Rule) ReturnPath(key *secret.Key, id string) string {
	id = strings.ToLower(id)
	return returnPrefix + id + "." + returnTag(key, id) + "@" + r.domain
}

// ParseReturnPath reports the message id a return path of this mail domain was
// made for, and false for any other address (another domain, a namespace's
// address, a wrong or missing tag). Case is ignored.
func (r *Rule) ParseReturnPath(key *secret.Key, addr string) (id string, ok bool) {
	if len(addr) > MaxAddressLength {
		return "", false
	}
	addr = strings.ToLower(strings.TrimSuffix(addr, "."))
	at := strings.LastIndexByte(addr, '@')
	if at < 0 || addr[at+1:] != r.domain {
		return "", false
	}
	rest, found := strings.CutPrefix(addr[:at], returnPrefix)
	if !found {
		return "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot <= 0 {
		return "", false
	}
	id, tag := rest[:dot], rest[dot+1:]
	if !hmac.Equal([]byte(tag), []byte(returnTag(key, id))) {
		return "", false
	}
	return id, true
}

// LooksLikeReturnPath reports whether addr has the form of a return path of
// this mail domain (bounce+...@<mail domain>), whether or not its tag is
// right: such an address is the server's own, never a mailbox a catch-all
// namespace should take.
func (r *Rule) LooksLikeReturnPath(addr string) bool {
	addr = strings.ToLower(strings.TrimSuffix(addr, "."))
	at := strings.LastIndexByte(addr, '@')
	return at >= 0 && addr[at+1:] == r.domain && strings.HasPrefix(addr[:at], returnPrefix)
}

func returnTag(key *secret.Key, id string) string {
	return key.Hex(returnTagLen, returnPurpose, id)
}

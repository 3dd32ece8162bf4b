package deliverability

import (
	"bytes"
	"crypto"
	"slices"
	"strings"
	"testing"
)

// TestDKIMSignatures verifies messages the test signs with go-msgauth's
// signer against keys published on the DNS server, and tampered copies.
func TestDKIMSignatures(t *testing.T) {
	srv := startDNS(t)
	k := keys()
	plain := fixture(t, "plain.eml")
	signed := func(selector string, key crypto.Signer) []byte { return sign(t, plain, "shop.test", selector, key) }
	tamperBody := func(raw []byte) []byte {
		return bytes.Replace(raw, []byte("arrive on Friday"), []byte("arrive on Monday"), 2)
	}
	tamperHeader := func(raw []byte) []byte {
		return bytes.Replace(raw, []byte("Subject: Your order 1042 has shipped"), []byte("Subject: Your order 1042 is delayed"), 1)
	}
	for _, tc := range []struct {
		name      string
		raw       []byte
		result    string
		bodyHash  string
		keyType   string
		keyBits   int
		algorithm string
		selector  string
		codes     []string
		status    Status
	}{
		{"RSA 2048", signed("r2048", k.rsa2048), "pass", "pass", "rsa", 2048, "rsa-sha256", "r2048", []string{"dkim_pass"}, Pass},
		{"RSA 1024: passes, weak key flagged", signed("r1024", k.rsa1024), "pass", "pass", "rsa", 1024, "rsa-sha256", "r1024", []string{"dkim_pass", "dkim_weak_key"}, Warning},
		{"Ed25519", signed("ed", k.ed), "pass", "pass", "ed25519", 256, "ed25519-sha256", "ed", []string{"dkim_pass"}, Pass},
		{"body changed after signing", tamperBody(signed("r2048", k.rsa2048)), "fail", "fail", "rsa", 2048, "rsa-sha256", "r2048", []string{"dkim_body_hash_mismatch"}, Fail},
		{"Ed25519, body changed", tamperBody(signed("ed", k.ed)), "fail", "fail", "ed25519", 256, "ed25519-sha256", "ed", []string{"dkim_body_hash_mismatch"}, Fail},
		{"signed header changed after signing", tamperHeader(signed("r2048", k.rsa2048)), "fail", "pass", "rsa", 2048, "rsa-sha256", "r2048", []string{"dkim_signature_invalid"}, Fail},
		{"Ed25519, header changed", tamperHeader(signed("ed", k.ed)), "fail", "pass", "ed25519", 256, "ed25519-sha256", "ed", []string{"dkim_signature_invalid"}, Fail},
		{"signed with a key not the published one", signed("r2048", k.rsa1024), "fail", "pass", "rsa", 2048, "rsa-sha256", "r2048", []string{"dkim_signature_invalid"}, Fail},
		{"no key at the selector", signed("gone", k.rsa2048), "permerror", "not_checked", "", 0, "rsa-sha256", "gone", []string{"dkim_key_not_found"}, Fail},
		{"revoked key", signed("revoked", k.rsa2048), "permerror", "not_checked", "", 0, "rsa-sha256", "revoked", []string{"dkim_key_revoked"}, Fail},
		{"key lookup fails", signed("down", k.rsa2048), "temperror", "not_checked", "", 0, "rsa-sha256", "down", []string{"dkim_temperror"}, Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkDKIM(ctx, testEnv(srv, input(tc.raw, "bounce@shop.test")))
			if len(r.Signatures) != 1 {
				t.Fatalf("%d signatures, issues %v", len(r.Signatures), r.Issues)
			}
			s := r.Signatures[0]
			if s.Result != tc.result || s.BodyHash != tc.bodyHash || s.KeyType != tc.keyType || s.KeyBits != tc.keyBits ||
				s.Algorithm != tc.algorithm || s.Selector != tc.selector || s.Domain != "shop.test" {
				t.Errorf("signature %+v", s)
			}
			if s.Canonicalization != "simple/simple" || !slices.Contains(s.SignedHeaders, "Subject") {
				t.Errorf("canonicalization %q, signed headers %v", s.Canonicalization, s.SignedHeaders)
			}
			if !slices.Equal(r.codes(), tc.codes) || r.Status != tc.status {
				t.Fatalf("codes %v status %s, want %v %s", r.codes(), r.Status, tc.codes, tc.status)
			}
			d := details(t, &r.Issues[0])
			if d["selector"] != tc.selector || d["domain"] != "shop.test" || d["result"] != tc.result || d["body_hash"] != tc.bodyHash {
				t.Errorf("details %v", d)
			}
			if tc.result != "pass" && (s.Error == "" || d["error"] != s.Error) {
				t.Errorf("error %q, details %v", s.Error, d["error"])
			}
		})
	}
}

// TestDKIMSeveral: every signature is verified; one that passes makes the
// others' failures warnings, since receivers need only one.
func TestDKIMSeveral(t *testing.T) {
	srv := startDNS(t)
	k := keys()
	raw := sign(t, fixture(t, "plain.eml"), "esp.test", "k1", k.rsa2048)
	raw = sign(t, raw, "shop.test", "gone", k.rsa2048)
	r := checkDKIM(ctx, testEnv(srv, input(raw, "bounce@esp.test")))
	if len(r.Signatures) != 2 || r.Signatures[0].Domain != "shop.test" || r.Signatures[1].Domain != "esp.test" {
		t.Fatalf("signatures %+v", r.Signatures)
	}
	if r.Signatures[0].Result != "permerror" || r.Signatures[1].Result != "pass" {
		t.Errorf("results %s, %s", r.Signatures[0].Result, r.Signatures[1].Result)
	}
	if !slices.Equal(r.codes(), []string{"dkim_key_not_found", "dkim_pass"}) || r.Status != Warning || r.Issues[0].Severity != Warning {
		t.Errorf("codes %v status %s", r.codes(), r.Status)
	}
}

func TestDKIMNone(t *testing.T) {
	srv := startDNS(t)
	r := checkDKIM(ctx, testEnv(srv, input(fixture(t, "plain.eml"), "bounce@shop.test")))
	if len(r.Signatures) != 0 || !slices.Equal(r.codes(), []string{"dkim_none"}) || r.Status != Warning {
		t.Fatalf("signatures %v codes %v status %s", r.Signatures, r.codes(), r.Status)
	}
	if !strings.Contains(r.Issues[0].Message, "._domainkey.shop.test") {
		t.Errorf("message %q does not say where to publish the key", r.Issues[0].Message)
	}
}

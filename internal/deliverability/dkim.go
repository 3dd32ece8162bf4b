package deliverability

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"strings"

	"github.com/emersion/go-msgauth/dkim"
)

// DKIMSignature is one DKIM-Signature field of the message and what its
// verification found (RFC 6376 section 6).
type DKIMSignature struct {
	Domain    string `json:"domain"`    // d=
	Selector  string `json:"selector"`  // s=
	Algorithm string `json:"algorithm"` // a=, e.g. rsa-sha256
	// KeyType and KeyBits describe the public key found at
	// <selector>._domainkey.<domain>, when one was.
	KeyType          string   `json:"key_type,omitempty"`
	KeyBits          int      `json:"key_bits,omitempty"`
	Canonicalization string   `json:"canonicalization,omitempty"` // c=
	SignedHeaders    []string `json:"signed_headers,omitempty"`   // h=
	// Result is pass, fail (the hashes did not match), temperror (the key
	// could not be fetched) or permerror (the signature or key cannot be used).
	Result string `json:"result"`
	// BodyHash is pass or fail once the body was hashed, else not_checked:
	// a fail is a body changed after signing; a pass with Result fail is a
	// signed header field changed (RFC 6376 section 6.1.3).
	BodyHash string `json:"body_hash"`
	Error    string `json:"error,omitempty"`
}

// DKIMResult is the dkim section: every signature verified.
type DKIMResult struct {
	Section
	Signatures []DKIMSignature `json:"signatures"`
}

// maxSignatures bounds the signatures verified in one message.
const maxSignatures = 10

// checkDKIM verifies every DKIM signature with go-msgauth over the run's
// resolver, reads each signature's tags and key for the evidence, and tells a
// changed body apart from a changed header.
func checkDKIM(ctx context.Context, e *env) *DKIMResult {
	r := &DKIMResult{Signatures: []DKIMSignature{}}
	defer r.finish()
	lookup := func(name string) ([]string, error) { return e.dns.LookupTXT(ctx, name) }
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(e.in.Raw), &dkim.VerifyOptions{LookupTXT: lookup, MaxVerifications: maxSignatures})
	if err != nil && len(verifs) == 0 {
		r.add(Warning, "dkim_unreadable", map[string]any{"error": err.Error()},
			"The message's header could not be read to verify DKIM (%v).", err)
		return r
	}
	tags := signatureTags(e.in.Raw)
	if len(verifs) == 0 {
		d := map[string]any{"from_domain": e.fromDomain}
		r.add(Warning, "dkim_none", d,
			"The message carries no DKIM signature. Sign it (RFC 6376) with a key published as a TXT record at <selector>._domainkey.%s; without one, DMARC rests on SPF alone, which forwarding breaks.", orDefault(e.fromDomain, "<your domain>"))
		return r
	}
	anyPass := false
	for i, v := range verifs {
		s := describeSignature(v, tagsAt(tags, i))
		s.KeyType, s.KeyBits = keyInfo(ctx, e.dns, s.Selector, s.Domain)
		r.Signatures = append(r.Signatures, s)
		anyPass = anyPass || s.Result == "pass"
	}
	for _, s := range r.Signatures {
		r.explain(s, anyPass)
	}
	return r
}

// describeSignature reads a verification's outcome: its result, and whether
// the body hash was reached and matched.
func describeSignature(v *dkim.Verification, tags map[string]string) DKIMSignature {
	s := DKIMSignature{Domain: v.Domain, Selector: stripSpace(tags["s"]), Algorithm: stripSpace(tags["a"]),
		Canonicalization: stripSpace(tags["c"]), SignedHeaders: v.HeaderKeys, Result: "pass", BodyHash: "pass"}
	if s.Domain == "" {
		s.Domain = stripSpace(tags["d"])
	}
	if s.Canonicalization == "" {
		s.Canonicalization = "simple/simple"
	}
	if v.Err == nil {
		return s
	}
	s.Error = v.Err.Error()
	switch {
	case dkim.IsTempFail(v.Err):
		s.Result, s.BodyHash = "temperror", "not_checked"
	case strings.Contains(s.Error, "body hash did not verify"):
		s.Result, s.BodyHash = "fail", "fail"
	case strings.Contains(s.Error, "signature did not verify"):
		s.Result = "fail" // the body hash matched; the header hash did not
	default:
		s.Result, s.BodyHash = "permerror", "not_checked"
	}
	return s
}

// explain adds the issues of one signature. A failure is a warning when
// another signature passes (receivers need one), a fail otherwise.
func (r *DKIMResult) explain(s DKIMSignature, anyPass bool) {
	d := map[string]any{"domain": s.Domain, "selector": s.Selector, "algorithm": s.Algorithm, "key_type": s.KeyType,
		"key_bits": s.KeyBits, "result": s.Result, "body_hash": s.BodyHash}
	if s.Error != "" {
		d["error"] = s.Error
	}
	key := s.Selector + "._domainkey." + s.Domain
	bad := Fail
	if anyPass {
		bad = Warning
	}
	switch {
	case s.Result == "pass":
		r.add(Pass, "dkim_pass", d, "The DKIM signature of %s (selector %s, %s) verifies.", s.Domain, s.Selector, s.Algorithm)
	case s.BodyHash == "fail":
		r.add(bad, "dkim_body_hash_mismatch", d,
			"The DKIM signature of %s does not match the body: the body was changed after signing (a footer or a link rewriter added on the way, or a different line ending). Sign as the last step before sending, or move the changing step before the signer.", s.Domain)
	case s.Result == "fail":
		r.add(bad, "dkim_signature_invalid", d,
			"The DKIM signature of %s matches the body but not the signed header fields: a signed header (%s) was changed after signing, or the key at %s is not the one that signed. Sign after the last header change, and check the published key matches the signing key.", s.Domain, strings.Join(s.SignedHeaders, ", "), key)
	case s.Result == "temperror":
		r.add(Warning, "dkim_temperror", d,
			"The DKIM key at %s could not be fetched (%s); receivers treat the signature as a temporary error and may defer the mail. Check that the domain's name servers answer.", key, s.Error)
	default:
		r.addPermError(s, d, key, bad)
	}
	switch {
	case s.KeyType == "rsa" && s.KeyBits > 0 && s.KeyBits < 1024:
		r.add(bad, "dkim_key_too_short", d,
			"The DKIM key at %s is RSA %d bits; receivers must ignore RSA keys under 1024 bits (RFC 8301 section 3.2). Publish a 2048-bit key under a new selector and sign with it.", key, s.KeyBits)
	case s.KeyType == "rsa" && s.KeyBits > 0 && s.KeyBits < 2048:
		r.add(Warning, "dkim_weak_key", d,
			"The DKIM key at %s is RSA %d bits, the least RFC 8301 allows; 2048 bits is recommended (section 3.2) and some receivers distrust shorter keys. Publish a 2048-bit key under a new selector and sign with it.", key, s.KeyBits)
	}
}

// addPermError explains a permerror by its cause, as go-msgauth words it.
func (r *DKIMResult) addPermError(s DKIMSignature, d map[string]any, key string, bad Status) {
	switch msg := s.Error; {
	case strings.Contains(msg, "no key for signature"), strings.Contains(msg, "no valid key found"):
		r.add(bad, "dkim_key_not_found", d,
			"No DKIM key is published at %s, so the signature of %s cannot be verified. Publish the signing key's public half there as a TXT record (\"v=DKIM1; k=rsa; p=...\").", key, s.Domain)
	case strings.Contains(msg, "key revoked"):
		r.add(bad, "dkim_key_revoked", d,
			"The DKIM key at %s is revoked (empty p=), so the signature of %s cannot pass. Sign with a current key.", key, s.Domain)
	case strings.Contains(msg, "hash algorithm too weak"):
		r.add(bad, "dkim_sha1", d,
			"The DKIM signature of %s uses rsa-sha1, which receivers must not accept (RFC 8301 section 3.1). Sign with rsa-sha256 or ed25519-sha256.", s.Domain)
	case strings.Contains(msg, "key is too short"):
		r.add(bad, "dkim_key_too_short", d,
			"The DKIM key at %s is shorter than 1024 bits, which receivers must ignore (RFC 8301 section 3.2). Publish a 2048-bit key under a new selector and sign with it.", key)
	case strings.Contains(msg, "signature has expired"):
		r.add(bad, "dkim_signature_expired", d,
			"The DKIM signature of %s has expired (its x= time has passed, RFC 6376 section 3.5). Sign with an expiry long enough for delivery, or none.", s.Domain)
	case strings.Contains(msg, "body length tag"):
		r.add(bad, "dkim_body_length_tag", d,
			"The DKIM signature of %s covers only part of the body (l= tag), which lets anyone append content; receivers distrust it (RFC 6376 section 8.2). Sign without l=.", s.Domain)
	default:
		r.add(bad, "dkim_permerror", d,
			"The DKIM signature of %s cannot be used (%s). Fix the signer's configuration or the key record at %s (RFC 6376 section 3.5 and 3.6.1).", s.Domain, msg, key)
	}
}

// keyInfo reads the key at <selector>._domainkey.<domain> (from the run's
// cache: the verification fetched it) and returns its type and size.
func keyInfo(ctx context.Context, l *Lookups, selector, domain string) (string, int) {
	if selector == "" || domain == "" {
		return "", 0
	}
	txts, err := l.LookupTXT(ctx, selector+"._domainkey."+domain)
	if err != nil || len(txts) != 1 {
		return "", 0
	}
	tags := parseTags(txts[0])
	p := stripSpace(tags["p"])
	b, err := base64.StdEncoding.DecodeString(p)
	if p == "" || err != nil {
		return "", 0
	}
	switch k := strings.ToLower(stripSpace(tags["k"])); k {
	case "", "rsa":
		pub, err := x509.ParsePKIXPublicKey(b)
		if err != nil {
			if pub, err = x509.ParsePKCS1PublicKey(b); err != nil {
				return "rsa", 0
			}
		}
		if rk, ok := pub.(*rsa.PublicKey); ok {
			return "rsa", rk.N.BitLen()
		}
		return "rsa", 0
	case "ed25519":
		return "ed25519", len(b) * 8
	default:
		return k, 0
	}
}

// signatureTags returns the tags of every DKIM-Signature header field, in
// header order, as go-msgauth verifies them.
func signatureTags(raw []byte) []map[string]string {
	var out []map[string]string
	for _, f := range headerFields(raw) {
		name, value, ok := strings.Cut(f, ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), "DKIM-Signature") {
			out = append(out, parseTags(value))
		}
	}
	return out
}

func tagsAt(tags []map[string]string, i int) map[string]string {
	if i < len(tags) {
		return tags[i]
	}
	return map[string]string{}
}

// headerFields returns the message's header fields, each unfolded (RFC 5322
// section 2.2.3), up to the empty line.
func headerFields(raw []byte) []string {
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			break
		}
		if (line[0] == ' ' || line[0] == '\t') && len(out) > 0 {
			out[len(out)-1] += line
			continue
		}
		out = append(out, line)
	}
	return out
}

// parseTags reads a tag=value list (RFC 6376 section 3.2), names in lower
// case; a tag given twice keeps its first value.
func parseTags(s string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(part, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			continue
		}
		if _, seen := out[k]; !seen {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// stripSpace removes folding white space from a tag value.
func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

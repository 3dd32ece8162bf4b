package message

import (
	"maps"
	"mime"
	"testing"
)

// The RFC 2231 half of parseBrokenMediaType, for parameter values that
// mime.ParseMediaType rejects: continuations (section 3), charset and language
// (section 4), both at once (section 4.1), and what mailers get wrong.

func TestPercentUnescape(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"plain", "plain", true},
		{"%41%42c", "ABc", true},
		{"%e2%82%ac", "€", true}, // either case of hexadecimal digit
		{"%E2%82%AC", "€", true},
		{"100%25", "100%", true},
		{"a%20b%2A", "a b*", true},
		{"%00", "\x00", true}, // the caller cleans NUL away, not the decoder
		{"%", "", false},
		{"a%", "", false},
		{"%4", "", false},
		{"a%4", "", false},
		{"%4g", "", false},
		{"%g4", "", false},
		{"%%41", "", false},
		{"ok%41then%zz", "", false}, // one bad escape spoils the value
	} {
		got, ok := percentUnescape(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("percentUnescape(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDecode2231(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		// Section 4: charset'language'percent-encoded octets.
		{"us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A", "This is ***fun***", true},
		{"utf-8''%E2%82%AC%20rates.pdf", "€ rates.pdf", true},
		{"UTF-8'de'M%C3%A4rz.csv", "März.csv", true}, // charset in any case; language ignored
		{"US-ASCII''plain", "plain", true},
		{"utf-8''", "", true},
		{"utf-8'en'it's", "it's", true}, // only the first two quotes delimit
		// Charsets other than UTF-8 and US-ASCII are not decoded, as
		// mime.ParseMediaType does: the value is dropped.
		{"iso-8859-1''caf%E9", "", false},
		{"''abc", "", false},
		// Malformed.
		{"utf-8'en", "", false},
		{"utf-8", "", false},
		{"", "", false},
		{"utf-8''bad%", "", false},
		{"utf-8''%G1", "", false},
	} {
		got, ok := decode2231(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("decode2231(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestJoinContinuations(t *testing.T) {
	for _, c := range []struct {
		name      string
		params    map[string]string            // read before, plain
		continued map[string]map[string]string // pieces by base name
		want      map[string]string
	}{
		{"section 3: numbered pieces joined in order",
			nil, map[string]map[string]string{"url": {"url*1": "cs.utk.edu/pub", "url*0": "ftp://"}},
			map[string]string{"url": "ftp://cs.utk.edu/pub"}},
		{"section 3: a plain piece keeps its % signs",
			nil, map[string]map[string]string{"t": {"t*0": "100%", "t*1": " sure %41"}},
			map[string]string{"t": "100% sure %41"}},
		{"section 4: one encoded value",
			nil, map[string]map[string]string{"title": {"title*": "us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A"}},
			map[string]string{"title": "This is ***fun***"}},
		{"section 4.1: encoded and plain pieces mixed",
			nil, map[string]map[string]string{"title": {
				"title*0*": "us-ascii'en'This%20is%20even%20more%20",
				"title*1*": "%2A%2A%2Afun%2A%2A%2A%20",
				"title*2":  "isn't it!"}},
			map[string]string{"title": "This is even more ***fun*** isn't it!"}},
		{"section 4.1: only the first piece names the charset",
			nil, map[string]map[string]string{"f": {"f*0*": "utf-8''na%C3%AF", "f*1*": "ve%20file", "f*2": ".txt"}},
			map[string]string{"f": "naïve file.txt"}},
		{"several parameters at once",
			map[string]string{"size": "12"}, map[string]map[string]string{
				"filename": {"filename*": "utf-8''%C3%A9.txt"},
				"name":     {"name*0": "a", "name*1": "b"}},
			map[string]string{"size": "12", "filename": "é.txt", "name": "ab"}},
		{"the RFC 2231 value replaces a plain one of the same name",
			map[string]string{"filename": "fallback.txt"}, map[string]map[string]string{"filename": {"filename*": "utf-8''real.txt"}},
			map[string]string{"filename": "real.txt"}},
		{"a single encoded value wins over numbered pieces",
			nil, map[string]map[string]string{"t": {"t*": "utf-8''one", "t*0": "two"}},
			map[string]string{"t": "one"}},
		{"numbering stops at the first gap",
			nil, map[string]map[string]string{"t": {"t*0": "a", "t*1": "b", "t*3": "d"}},
			map[string]string{"t": "ab"}},
		{"a plain and an encoded piece of one number: the plain one",
			nil, map[string]map[string]string{"t": {"t*0": "plain", "t*0*": "utf-8''enc"}},
			map[string]string{"t": "plain"}},
		{"numbers are decimal without leading zeros",
			nil, map[string]map[string]string{"t": {"t*00": "a", "t*01": "b"}},
			map[string]string{}},
		{"pieces that do not start at 0 are no value",
			map[string]string{"t": "kept"}, map[string]map[string]string{"t": {"t*1": "b", "t*2": "c"}},
			map[string]string{"t": "kept"}},
		{"an encoded value in another charset is dropped",
			map[string]string{"t": "kept"}, map[string]map[string]string{"t": {"t*": "iso-8859-1''caf%E9"}},
			map[string]string{"t": "kept"}},
		{"a malformed encoded value is dropped",
			nil, map[string]map[string]string{"t": {"t*": "utf-8''%zz"}, "u": {"u*": "no quotes"}},
			map[string]string{}},
		{"a first piece that does not decode is left out, the rest kept",
			nil, map[string]map[string]string{"t": {"t*0*": "koi8-r''%F0", "t*1": "rest"}},
			map[string]string{"t": "rest"}},
		{"a later encoded piece that does not decode is left out",
			nil, map[string]map[string]string{"t": {"t*0*": "utf-8''a", "t*1*": "%zz", "t*2": "c"}},
			map[string]string{"t": "ac"}},
		{"a later encoded piece names no charset: its quotes are text",
			nil, map[string]map[string]string{"t": {"t*0*": "utf-8''a", "t*1*": "utf-8''b"}},
			map[string]string{"t": "autf-8''b"}},
		{"no pieces",
			nil, map[string]map[string]string{"t": {}},
			map[string]string{}},
	} {
		params := maps.Clone(c.params)
		if params == nil {
			params = map[string]string{}
		}
		joinContinuations(params, c.continued)
		if !maps.Equal(params, c.want) {
			t.Errorf("%s: %q, want %q", c.name, params, c.want)
		}
	}
}

// Whole values that mime.ParseMediaType rejects (an unquoted space, a parameter
// without a value, a missing ';') still have their RFC 2231 parameters read.
func TestParseBrokenMediaType2231(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{`attachment; filename*0=my file; filename*1=.pdf`, map[string]string{"filename": "my file.pdf"}},
		{`attachment; filename*=UTF-8''%E2%82%AC rates.pdf`, map[string]string{"filename": "€ rates.pdf"}},
		{`attachment; filename*="utf-8''quoted%20value.txt"; junk`, map[string]string{"filename": "quoted value.txt"}},
		{`attachment; filename*0*=utf-8''na%C3%AFve; filename*1=" file.txt"; junk`, map[string]string{"filename": "naïve file.txt"}},
		{`attachment; FILENAME*0=A; Filename*1=B; junk`, map[string]string{"filename": "AB"}}, // names in any case
		{`attachment; filename*0=a; filename*0=b; junk`, map[string]string{"filename": "a"}},  // a repeated piece keeps its first value
		{`attachment; filename*=iso-8859-1''caf%E9 x.txt; name=b.txt`, map[string]string{"name": "b.txt"}},
		{`attachment; filename*=utf-8''bad%; junk`, map[string]string{}},
		{`attachment filename*=utf-8''%C3%A9.txt`, map[string]string{"filename": "é.txt"}}, // no ';' after the type
		// Quoted pieces: a ';' inside quotes is text, and a backslash escapes a
		// tspecial only (a Windows path keeps its backslashes).
		{`attachment; filename*0="a;b"; filename*1="\"c\".txt"; junk`, map[string]string{"filename": `a;b"c".txt`}},
		{`attachment; filename*0="C:\dir"; filename*1="\x.pdf"; junk`, map[string]string{"filename": `C:\dir\x.pdf`}},
	} {
		_, got, ok := parseMediaType(c.in)
		if _, _, err := mime.ParseMediaType(c.in); err == nil {
			t.Errorf("%s: mime.ParseMediaType reads it; the case does not reach the fallback", c.in)
		}
		if !ok || !maps.Equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
}

// On the values mime.ParseMediaType reads, the fallback reads the same
// parameters (joinContinuations follows it), so a value does not change meaning
// for being broken elsewhere. The values are the examples of RFC 2231.
func TestParseBrokenMediaType2231AsStandard(t *testing.T) {
	for _, in := range []string{
		`message/external-body; access-type=URL; URL*0="ftp://"; URL*1="cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar"`,
		`application/x-stuff; title*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A`,
		`application/x-stuff; title*0*=us-ascii'en'This%20is%20even%20more%20; title*1*=%2A%2A%2Afun%2A%2A%2A%20; title*2="isn't it!"`,
		`attachment; filename*=utf-8''%E2%82%AC.pdf; filename=fallback.pdf`,
		`attachment; filename*=iso-8859-1''caf%E9.txt`,
		`attachment; filename*0*=utf-8''a; filename*1*=%zz; filename*2=c`,
		`attachment; filename*0=a; filename*2=c`,
	} {
		wantType, want, err := mime.ParseMediaType(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		gotType, got, ok := parseBrokenMediaType(in)
		if !ok || gotType != wantType || !maps.Equal(got, want) {
			t.Errorf("%s: %s %q; mime.ParseMediaType: %s %q", in, gotType, got, wantType, want)
		}
	}
}

// An RFC 2231 file name in a broken Content-Disposition reaches the attachment.
func TestParse2231Filename(t *testing.T) {
	raw := "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*0*=utf-8''%E2%82%AC%20rates;\r\n" +
		" filename*1=\" 2026.pdf\"; size\r\n\r\nx\r\n--b--\r\n"
	p := Parse([]byte(raw))
	if len(p.Attachments) != 1 || p.Attachments[0].Filename != "€ rates 2026.pdf" {
		t.Errorf("attachments %+v", p.Attachments)
	}
}

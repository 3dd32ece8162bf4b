package message

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// diffCase is one message of the differential test.
type diffCase struct {
	name string
	raw  string
}

// TestParseDifferential parses every message of the corpus, every fuzz seed and
// the edge cases of diffCases with Parse and with the enmime-based parser
// it replaced (parse_enmime_test.go), and requires the same result, except for
// the messages of expectedDifferences, where the new result is the better one
// and must differ as described.
func TestParseDifferential(t *testing.T) {
	cases := differentialCases(t)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		seen[c.name] = true
		got, ref := Parse([]byte(c.raw)), parseMessageEnmime([]byte(c.raw))
		diff := parsedDiff(got, ref)
		want, expected := expectedDifferences[strings.TrimSuffix(c.name, "/lf")]
		switch {
		case !expected && diff != "":
			t.Errorf("%s: differs from enmime:\n%s\nmessage: %q", c.name, diff, c.raw)
		case expected && diff == "":
			t.Errorf("%s: listed as a deliberate difference (%s) but parses as enmime did", c.name, want.why)
		case expected && want.check != nil:
			if err := want.check(got); err != nil {
				t.Errorf("%s: %v\n%s", c.name, err, diff)
			}
		}
	}
	for name := range expectedDifferences {
		if !seen[name] && !seen[name+"/lf"] {
			t.Errorf("expected difference %s names no case", name)
		}
	}
}

// differentialCases gathers the messages of the differential test: the corpus,
// the fuzz seeds (and any fuzz corpus files kept in testdata/fuzz), the edge
// cases of diffCases, and each of those again with LF line ends.
func differentialCases(t *testing.T) []diffCase {
	var cases []diffCase
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "mail", "*.eml"))
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, diffCase{"corpus/" + strings.TrimSuffix(filepath.Base(f), ".eml"), string(raw)})
	}
	for i, s := range parseMessageSeeds {
		cases = append(cases, diffCase{fmt.Sprintf("seed/message/%d", i), s})
	}
	for i, s := range decodeHeaderSeeds {
		cases = append(cases, diffCase{fmt.Sprintf("seed/header/%d", i), string(headerMessage(s))})
	}
	for i, s := range filenameSeeds {
		cases = append(cases, diffCase{fmt.Sprintf("seed/filename/%d", i), string(filenameMessage(s))})
	}
	for _, target := range []string{"FuzzParseMessage", "FuzzParseDifferential"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		for _, f := range files {
			// Messages enmime would take too long on are left to the fuzz target.
			if raw, ok := readFuzzFile(t, f); ok && strings.Count(strings.ToLower(raw), "boundary") <= maxCompareBoundaries {
				cases = append(cases, diffCase{"fuzz/" + target + "/" + filepath.Base(f), raw})
			}
		}
	}
	for _, c := range diffCases {
		cases = append(cases, c)
		if lf := strings.ReplaceAll(c.raw, "\r\n", "\n"); lf != c.raw {
			cases = append(cases, diffCase{c.name + "/lf", lf})
		}
	}
	return cases
}

// FuzzParseDifferential parses any bytes and checks what the API relies on:
// no panic, valid UTF-8 without NUL in every string, lower-case header names, and
// the limits on headers, addresses, attachments and file names. Where enmime
// and Parse both read the message as MIME, its subject, addresses and
// headers must also come out as enmime read them. The deliberate differences
// about header fields are in ISO-8859-1 and UTF-7 encoded words, so messages
// that name those charsets are not compared; and enmime takes time exponential
// in the nesting depth of a multipart cut off before its end, so messages with
// more than maxCompareBoundaries boundary parameters are not given to it.
//
//	go test ./internal/message -run '^$' -fuzz FuzzParseDifferential -fuzztime 3m
func FuzzParseDifferential(f *testing.F) {
	for _, c := range diffCases {
		if len(c.raw) < 16<<10 {
			f.Add([]byte(c.raw))
		}
	}
	for _, s := range parseMessageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := Parse(raw)
		if err := checkParsed(p); err != nil {
			t.Fatalf("%v\nmessage: %q", err, raw)
		}
		src := utf8Headers(raw)
		if _, ok := readMIME(src); !ok || !comparableHeaders(raw) {
			return
		}
		if env, err := enmimeParser.ReadEnvelope(bytes.NewReader(src)); err != nil || env == nil || env.Root == nil {
			return
		}
		ref := parseMessageEnmime(raw)
		p.Text, p.HTML, p.Attachments = "", "", nil
		ref.Text, ref.HTML, ref.Attachments = "", "", nil
		if diff := parsedDiff(p, ref); diff != "" {
			t.Fatalf("header fields differ from enmime:\n%s\nmessage: %q", diff, raw)
		}
	})
}

// comparableHeaders reports whether enmime may read the message's headers in
// time and without a deliberate difference: it has at most maxCompareBoundaries
// boundary parameters and names neither UTF-7 nor ISO-8859-1.
func comparableHeaders(raw []byte) bool {
	lower := bytes.ToLower(raw)
	if bytes.Count(lower, []byte("boundary")) > maxCompareBoundaries {
		return false
	}
	for _, label := range []string{"utf7", "utf-7", "8859-1", "8859_1", "88591"} {
		if bytes.Contains(lower, []byte(label)) {
			return false
		}
	}
	return true
}

// maxCompareBoundaries is the most boundary parameters a fuzzed message may have
// to be parsed by enmime too, whose time doubles with each level of a multipart
// cut off before its end (BenchmarkParseCutOff).
const maxCompareBoundaries = 8

// checkParsed checks the invariants of a parsed message.
func checkParsed(p Parsed) error {
	text := func(what, s string) error {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%s %q is not clean UTF-8", what, s)
		}
		return nil
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(text("subject", p.Subject))
	add(text("text", p.Text))
	add(text("html", p.HTML))
	if len(p.Headers) > maxHeaders {
		add(fmt.Errorf("%d headers", len(p.Headers)))
	}
	for k, v := range p.Headers {
		add(text("header name", k))
		add(text("header "+k, v))
		if k != strings.ToLower(k) {
			add(fmt.Errorf("header name %q not in lower case", k))
		}
		if len(v) > maxHeaderValue {
			add(fmt.Errorf("header %s is %d bytes", k, len(v)))
		}
	}
	if len(p.To) > maxAddresses || len(p.Cc) > maxAddresses {
		add(fmt.Errorf("%d to, %d cc addresses", len(p.To), len(p.Cc)))
	}
	for _, a := range append(append([]Address{p.From}, p.To...), p.Cc...) {
		add(text("address", a.Address))
		add(text("name", a.Name))
	}
	if len(p.Attachments) > maxAttachments {
		add(fmt.Errorf("%d attachments", len(p.Attachments)))
	}
	for _, a := range p.Attachments {
		add(text("file name", a.Filename))
		add(text("content type", a.ContentType))
		add(text("content id", a.ContentID))
		if a.Filename == "" || utf8.RuneCountInString(a.Filename) > maxFilenameRunes || strings.ContainsAny(a.Filename, `/\`) {
			add(fmt.Errorf("file name %q", a.Filename))
		}
		if a.ContentType == "" || a.ContentType != strings.ToLower(a.ContentType) {
			add(fmt.Errorf("content type %q", a.ContentType))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// readFuzzFile reads the []byte value of a file of a fuzz corpus.
func readFuzzFile(t *testing.T, path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		return "", false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	return s, err == nil
}

// parsedDiff describes how two parsed messages differ ("" when they do not). A
// nil slice and an empty one are the same.
func parsedDiff(got, ref Parsed) string {
	var b strings.Builder
	field := func(name string, g, r any) {
		if !reflect.DeepEqual(g, r) {
			fmt.Fprintf(&b, "  %s:\n    new    %q\n    enmime %q\n", name, g, r)
		}
	}
	field("from", got.From, ref.From)
	if len(got.To)+len(ref.To) > 0 {
		field("to", got.To, ref.To)
	}
	if len(got.Cc)+len(ref.Cc) > 0 {
		field("cc", got.Cc, ref.Cc)
	}
	field("subject", got.Subject, ref.Subject)
	field("text", got.Text, ref.Text)
	field("html", got.HTML, ref.HTML)
	var names []string
	for k := range got.Headers {
		names = append(names, k)
	}
	for k := range ref.Headers {
		if _, ok := got.Headers[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		g, gok := got.Headers[k]
		r, rok := ref.Headers[k]
		if g != r || gok != rok {
			field("headers["+k+"]", g, r)
		}
	}
	if len(got.Attachments) != len(ref.Attachments) {
		fmt.Fprintf(&b, "  attachments: new %d, enmime %d\n", len(got.Attachments), len(ref.Attachments))
	}
	for i := 0; i < len(got.Attachments) && i < len(ref.Attachments); i++ {
		g, r := got.Attachments[i], ref.Attachments[i]
		field(fmt.Sprintf("attachments[%d]", i), attachmentSummary(g), attachmentSummary(r))
	}
	return b.String()
}

func attachmentSummary(a Attachment) string {
	return fmt.Sprintf("%s %s cid=%q inline=%v data=%q", a.Filename, a.ContentType, a.ContentID, a.Inline, a.Data)
}

// expectedDifference is a deliberate difference from enmime: why the new result
// is right, and a check of it.
type expectedDifference struct {
	why   string
	check func(p Parsed) error
}

// The deliberate differences, by case name (its LF variant differs the same
// way). docs/inbox.md describes each.
var expectedDifferences = map[string]expectedDifference{
	// A part without Content-Type is text/plain (RFC 2045 section 5.2), but its
	// Content-Disposition, file name and Content-ID still count: enmime ignored
	// them and put the attachment's bytes into the body text.
	"seed/message/2": {"a part without Content-Type keeps its disposition", func(p Parsed) error {
		return wantAttachment(p, 0, "é.txt", "y")
	}},
	"part/no-content-type-attachment": {"a part without Content-Type keeps its disposition", func(p Parsed) error {
		if p.Text != "" {
			return fmt.Errorf("text %q", p.Text)
		}
		return wantAttachment(p, 0, "report.pdf", "%PDF-1.4\n")
	}},
	// A delimiter is a line that starts with "--" and the boundary (RFC 2046
	// section 5.1.1). enmime also took one anywhere in a line (cutting the
	// part there, dropping the rest of the line) or after one stray character.
	"nested/boundary-prefix":    {"a boundary counts only at the start of a line", wantText("inner text\n--\nouter text --b-- not a boundary\r\n--b-not")},
	"boundary/mid-line":         {"a boundary counts only at the start of a line", wantText("hello x--b more\n--\nsecond")},
	"boundary/in-preamble-line": {"a boundary counts only at the start of a line", wantText("one")},
	"boundary/indented":         {"a boundary counts only at the start of a line", wantText("first\r\n --b\r\nContent-Type: text/plain\r\n\r\nsecond")},
	// RFC 2046 allows boundaries of 70 characters; enmime could not find one
	// longer than its 4 KB read buffer and read the message as broken mail.
	"boundary/very-long": {"a boundary over 4 KB is found", wantText("hello")},
	// A part that does not start with a header field or a blank line has no
	// header; enmime dropped it.
	"part/no-blank-line": {"a part without a header is kept as text", wantText("straight to the text\n--\nsecond")},
	// Quoted-printable (RFC 2045 section 6.7): a line ending in "=" is a soft
	// line break also when transport added white space after the "=" (rule 3)
	// and when it is the last line before the boundary; white space at the end
	// of a line is dropped however long the line. enmime kept a literal "=" in
	// the first two cases and the white space on lines over 1024 bytes.
	"qp/soft-break-before-boundary": {"quoted-printable soft line break before the boundary", wantText("no newline at the end")},
	"qp/soft-break-with-space":      {"quoted-printable soft line break followed by white space", wantText("joined line")},
	"qp/long-line-trailing-space": {"quoted-printable trailing white space dropped on long lines", func(p Parsed) error {
		if strings.Contains(p.Text, " ") {
			return fmt.Errorf("white space kept in %q", p.Text)
		}
		return nil
	}},
	// Base64: characters outside the alphabet are skipped, 8-bit ones too, and a
	// dangling last character is dropped; enmime lost the whole part's content.
	"base64/8bit-junk":          {"base64 with 8-bit junk decodes", func(p Parsed) error { return wantAttachment(p, 0, "a.bin", "hello") }},
	"base64/dangling-character": {"base64 with a dangling character decodes", func(p Parsed) error { return wantAttachment(p, 0, "a.bin", "hello ") }},
	// ISO-8859-1 is read as Windows-1252 (the WHATWG Encoding Standard, as raw
	// 8-bit headers already were), in bodies and in encoded words, so bytes
	// 0x80-0x9F are the characters the sender saw, not C1 control characters.
	"charset/iso-8859-1-c1": {"ISO-8859-1 read as Windows-1252", wantText("€uro “quoted”")},
	"header/encoded-latin1-c1": {"ISO-8859-1 encoded words read as Windows-1252", func(p Parsed) error {
		if p.Subject != "€uro€“x”" || p.From.Name != "€uro" {
			return fmt.Errorf("subject %q, from %+v", p.Subject, p.From)
		}
		return nil
	}},
	// An encoded word's charset may name a language (RFC 2231 section 5), which
	// enmime took for part of the charset's name, keeping the word as sent.
	"header/encoded-word-language": {"a language in an encoded word's charset", func(p Parsed) error {
		if p.From != (Address{Address: "moore@cs.utk.edu", Name: "Keith Moore"}) || p.Subject != "Märzcafé" {
			return fmt.Errorf("from %+v, subject %q", p.From, p.Subject)
		}
		return wantAttachment(p, 0, "€.pdf", "x")
	}},
	// Invalid UTF-7 gives U+FFFD, as invalid bytes do in every charset; with
	// enmime the whole message failed to parse, and an encoded word was kept
	// as sent.
	"charset/utf-7-invalid": {"invalid UTF-7 is replaced, not fatal", wantText("\uFFFD \uFFFD caf\uFFFD")},
	"charset/utf-7-invalid-header": {"invalid UTF-7 in an encoded word is replaced", func(p Parsed) error {
		if p.Subject != "\uFFFDM4" {
			return fmt.Errorf("subject %q", p.Subject)
		}
		return nil
	}},
	// A text part without a charset (RFC 2046 section 4.1.2 says US-ASCII) is
	// read as UTF-8 when it is valid UTF-8 and as Windows-1252 otherwise, as
	// headers are. enmime read a message without Content-Type as Windows-1252
	// even when it was UTF-8, and replaced 8-bit bytes with U+FFFD in parts that
	// declared no charset (guessing a charset only for long texts).
	"charset/undeclared-latin1":         {"undeclared 8-bit text read as Windows-1252", wantText("Café")},
	"charset/no-content-type-latin1":    {"undeclared 8-bit text read as Windows-1252", wantText("Café")},
	"charset/root-no-content-type-utf8": {"undeclared UTF-8 text kept", wantText("Café €\r\n")},
	// An HTML part without a declared charset is read in the charset of its meta
	// tag, as browsers read it; enmime did this only for a message that is a
	// single HTML part.
	"charset/undeclared-html-meta": {"meta charset read in every HTML part", func(p Parsed) error {
		if p.HTML != `<meta charset="windows-1252"><p>Café</p>` {
			return fmt.Errorf("html %q", p.HTML)
		}
		return nil
	}},
	// A raw 8-bit file name is read in the part's charset (else Windows-1252)
	// also when it is not quoted; enmime lost its 8-bit characters.
	"charset/filename-latin1-unquoted": {"unquoted 8-bit file name decoded", func(p Parsed) error { return wantAttachment(p, 0, "März.csv", "x") }},
	// So are the bytes of an encoded word in a file name that are not valid in
	// its charset (a Latin-1 byte in a word labelled UTF-8); enmime made them
	// spaces.
	"charset/filename-word-not-utf8": {"mislabelled encoded file name decoded", func(p Parsed) error { return wantAttachment(p, 0, "März.csv", "x") }},
	// Broken Content-Type values: a missing ";" before the parameters is assumed
	// (enmime made the part application/octet-stream), and a part whose
	// Content-Type cannot be read at all is text/plain, as RFC 2045 section 5.2
	// recommends (enmime dropped the part).
	"param/missing-semicolon": {"missing ';' before parameters assumed", wantText("Café")},
	"param/garbage-type":      {"unreadable part Content-Type is text/plain", wantText("first\n--\nsecond")},
	// Other malformed values are repaired by parseBrokenMediaType's rules,
	// which differ from enmime's: text after a quoted value's closing quote is
	// dropped (enmime kept it, quotes and all, in the file name), and a
	// Content-Type line that swallowed the body for want of a blank line makes
	// the message broken mail, its text kept (enmime dropped the body).
	"param/junk-after-quote": {"text after a closing quote dropped", func(p Parsed) error { return wantAttachment(p, 0, "report.pdf", "x") }},
	"param/body-in-header": {"a body folded into Content-Type is kept", func(p Parsed) error {
		if !strings.Contains(p.Text, "<p>Café</p>") || p.HTML != "" {
			return fmt.Errorf("text %q, html %q", p.Text, p.HTML)
		}
		return nil
	}},
	// Content-ID is returned as sent, so it matches the message's cid: URLs;
	// enmime URL-decoded it ("+" became a space).
	"cid/url-characters": {"Content-ID kept as sent", func(p Parsed) error {
		if len(p.Attachments) != 1 || p.Attachments[0].ContentID != "a+b%41@x" {
			return fmt.Errorf("attachments %+v", p.Attachments)
		}
		return nil
	}},
}

// wantText checks the text, whatever its line ends.
func wantText(text string) func(Parsed) error {
	return func(p Parsed) error {
		if strings.ReplaceAll(p.Text, "\r\n", "\n") != strings.ReplaceAll(text, "\r\n", "\n") {
			return fmt.Errorf("text %q, want %q", p.Text, text)
		}
		return nil
	}
}

func wantAttachment(p Parsed, i int, name, data string) error {
	if len(p.Attachments) <= i {
		return fmt.Errorf("%d attachments", len(p.Attachments))
	}
	if a := p.Attachments[i]; a.Filename != name || string(a.Data) != data || a.Inline {
		return fmt.Errorf("attachment %d is %s", i, attachmentSummary(a))
	}
	return nil
}

// multipart wraps parts in a multipart/mixed message with boundary b.
func multipart(parts ...string) string {
	return "From: a@example.com\r\nTo: b@example.com\r\nSubject: test\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\n" + strings.Join(parts, "\r\n--b\r\n") + "\r\n--b--\r\n"
}

func b64lines(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	return b.String() + enc
}

// crlf turns the LF line ends of a Go raw string into CRLF.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// manyHeaders is a message with n distinct header fields and m Received fields.
func manyHeaders(n, m int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "X-H%04d: value %d\r\n", i, i)
	}
	for i := 0; i < m; i++ {
		fmt.Fprintf(&b, "Received: from hop%d\r\n", i)
	}
	return b.String() + "Subject: many\r\n\r\nbody\r\n"
}

// manyParts is a multipart message with n attachments.
func manyParts(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f%d.bin\r\n\r\n%d", i, i)
	}
	return multipart(parts...)
}

// manyAddresses is a message whose To has n addresses.
func manyAddresses(n int) string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("u%d@example.com", i)
	}
	return "To: " + strings.Join(addrs, ", ") + "\r\nSubject: many\r\n\r\nbody\r\n"
}

// nested is a multipart message nested depth levels deep.
func nested(depth int) string {
	body := "Content-Type: text/plain\r\n\r\ninnermost"
	for i := depth; i > 0; i-- {
		b := fmt.Sprintf("n%d", i)
		body = "Content-Type: multipart/mixed; boundary=" + b + "\r\n\r\n--" + b + "\r\n" + body + "\r\n--" + b + "--"
	}
	return "Subject: nested\r\n" + body + "\r\n"
}

var binaryData = func() []byte {
	b := make([]byte, 3000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// diffCases are edge cases written for the differential test. Each also runs
// with LF line ends (name/lf).
var diffCases = []diffCase{
	// Structure.
	{"nested/mixed-alternative-related", crlf(`From: "A" <a@example.com>
To: b@example.com
Subject: nested
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer"

This is a multi-part message in MIME format.
--outer
Content-Type: multipart/alternative; boundary="alt"

--alt
Content-Type: text/plain; charset=utf-8

plain body
--alt
Content-Type: multipart/related; boundary="rel"; type="text/html"

--rel
Content-Type: text/html; charset=utf-8

<p>html <img src="cid:img1@x"></p>
--rel
Content-Type: image/png
Content-ID: <img1@x>
Content-Transfer-Encoding: base64

iVBORw0KGgoAAAANSUhEUg==
--rel--
--alt--
--outer
Content-Type: application/pdf; name="doc.pdf"
Content-Disposition: attachment; filename="doc.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--outer--
epilogue text
`)},
	{"nested/deep-5", nested(5)},
	{"nested/deep-50", nested(50)},
	{"nested/boundary-prefix", crlf(`Content-Type: multipart/mixed; boundary=b

--b
Content-Type: multipart/alternative; boundary=b2

--b2
Content-Type: text/plain

inner text
--b2
Content-Type: text/html

<p>inner</p>
--b2--
--b
Content-Type: text/plain

outer text --b-- not a boundary
--b-not
--b--
`)},
	{"boundary/preamble-epilogue", crlf(`Content-Type: multipart/mixed; boundary=b

preamble line

--b
Content-Type: text/plain

one
--b--
epilogue
--b
Content-Type: text/plain

after the close
`)},
	{"boundary/missing-close", crlf(`Content-Type: multipart/mixed; boundary=b

--b
Content-Type: text/plain

one
--b
Content-Type: application/octet-stream
Content-Transfer-Encoding: base64

aGVsbG8=
`)},
	{"boundary/trailing-space", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b  \r\nContent-Type: text/plain\r\n\r\none\r\n--b\t\r\nContent-Type: text/plain\r\n\r\ntwo\r\n--b--  \r\n"},
	{"boundary/comment-after", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b a comment\r\nContent-Type: text/plain\r\n\r\none\r\n--b--\r\n"},
	{"boundary/close-no-crlf", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n--b--"},
	{"boundary/cut-after-delimiter", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n--b\r\n"},
	{"boundary/cut-in-delimiter", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n--b"},
	{"boundary/cut-delimiter-cr", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n--b\r"},
	{"boundary/empty-parts", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n--b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\ntext\r\n--b\r\n\r\n--b--\r\n"},
	{"boundary/crcrlf", "Content-Type: multipart/mixed; boundary=b\r\r\n\r\r\n--b\r\r\nContent-Type: text/plain\r\r\n\r\r\none\r\r\n--b\r\r\nContent-Type: text/plain\r\r\n\r\r\ntwo\r\r\n--b--\r\r\n"},
	{"boundary/not-found", "Content-Type: multipart/mixed; boundary=zzz\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n--b--\r\n"},
	{"boundary/no-parameter", "Subject: x\r\nContent-Type: multipart/mixed\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n--b--\r\n"},
	{"boundary/unquoted-equals", "Content-Type: multipart/alternative; boundary=----=_NextPart_000_0001_01D\r\n\r\n------=_NextPart_000_0001_01D\r\nContent-Type: text/plain\r\n\r\nplain\r\n------=_NextPart_000_0001_01D\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n------=_NextPart_000_0001_01D--\r\n"},
	{"boundary/special-characters", "Content-Type: multipart/mixed; boundary=\"(a+b)=?c.d\"\r\n\r\n--(a+b)=?c.d\r\nContent-Type: text/plain\r\n\r\nbody\r\n--(a+b)=?c.d--\r\n"},
	{"boundary/very-long", "Content-Type: multipart/mixed; boundary=" + strings.Repeat("x", 5000) + "\r\n\r\n--" + strings.Repeat("x", 5000) +
		"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--" + strings.Repeat("x", 5000) + "--\r\n"},
	{"boundary/mid-line", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello x--b more\r\n--b\r\nContent-Type: text/plain\r\n\r\nsecond\r\n--b--\r\n"},
	{"boundary/in-preamble-line", "Content-Type: multipart/mixed; boundary=b\r\n\r\nsee --b-- below\r\n--b\r\nContent-Type: text/plain\r\n\r\none\r\n--b--\r\n"},
	{"boundary/indented", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nfirst\r\n --b\r\nContent-Type: text/plain\r\n\r\nsecond\r\n--b--\r\n"},
	{"part/no-headers", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nno headers\r\n--b--\r\n"},
	{"part/no-blank-line", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nstraight to the text\r\n--b\r\nContent-Type: text/plain\r\n\r\nsecond\r\n--b--\r\n"},
	{"part/headers-only", "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n--b--\r\n"},
	{"part/no-content-type-attachment", multipart("Content-Disposition: attachment; filename=\"report.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK")},
	{"part/no-content-type-cid", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-ID: <x@y>\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=")},
	{"part/text-with-boundary", multipart("Content-Type: text/plain; boundary=zz\r\n\r\n--zz\r\nnot a part\r\n--zz--")},
	{"part/octet-stream-with-boundary", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: application/octet-stream; boundary=zz\r\n\r\n--zz\r\nContent-Type: text/plain\r\n\r\ninner\r\n--zz--")},
	{"part/octet-stream-boundary-not-found", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: application/octet-stream; name=x.bin; boundary=zz\r\n\r\nno parts here")},
	{"part/multipart-without-boundary", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: multipart/alternative\r\n\r\nlost")},
	{"part/message-rfc822", multipart("Content-Type: text/plain\r\n\r\nsee below", "Content-Type: message/rfc822\r\n\r\nFrom: x@y\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n\r\ninner body")},
	{"part/message-rfc822-no-subject", multipart("Content-Type: message/rfc822\r\nContent-Disposition: attachment\r\n\r\nFrom: x@y\r\n\r\ninner body")},
	{"part/alternative-calendar", crlf(`Content-Type: multipart/alternative; boundary=a

--a
Content-Type: text/plain

first plain
--a
Content-Type: text/plain

second plain
--a
Content-Type: text/html

<p>first</p>
--a
Content-Type: text/html

<p>second</p>
--a
Content-Type: text/calendar; method=REQUEST; charset=windows-1252

BEGIN:VCALENDAR
SUMMARY:Caf` + "\xe9" + `
END:VCALENDAR
--a--
`)},
	{"part/mixed-texts-joined", multipart("Content-Type: text/plain\r\n\r\none", "Content-Type: text/html\r\n\r\n<p>a</p>", "Content-Type: image/gif\r\nContent-Disposition: inline\r\n\r\nGIF89a", "Content-Type: text/plain\r\n\r\ntwo", "Content-Type: text/html\r\n\r\n<p>b</p>")},
	{"part/inline-named-text", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: text/plain; name=notes.txt\r\nContent-Disposition: inline; filename=notes.txt\r\n\r\nnotes")},
	{"part/disposition-upper-case", multipart("Content-Type: image/png\r\nContent-Disposition: INLINE; FILENAME=\"a.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=")},
	{"part/empty-leftovers", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: application/octet-stream\r\n\r\n", "Content-Type: image/png\r\nContent-ID: <keep@x>\r\n\r\n")},
	{"part/report", crlf(`Content-Type: multipart/report; report-type=delivery-status; boundary=r

--r
Content-Type: text/plain

failed
--r
Content-Type: message/delivery-status

Status: 5.1.1
--r
Content-Type: text/rfc822-headers

From: x@y
Subject: original
--r--
`)},
	{"single/pdf", "Content-Type: application/pdf; name=doc.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n"},
	{"single/inline-image", "Content-Type: image/png\r\nContent-Disposition: inline\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n"},
	{"single/text-attachment", "Content-Type: text/csv; charset=windows-1252\r\nContent-Disposition: attachment; filename=a.csv\r\n\r\nCaf\xe9;1\r\n"},
	{"single/text-plain-attachment", "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Disposition: attachment\r\n\r\nCaf\xe9\r\n"},
	{"single/rfc822", "Subject: outer\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nbody\r\n"},
	{"single/html-meta-charset", "Content-Type: text/html\r\n\r\n<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1252\"></head><body>Caf\xe9 \x93quoted\x94</body></html>\r\n"},
	{"single/html-meta-charset5", "Content-Type: text/html\r\n\r\n<html><head><META CHARSET=\"koi8-r\"></head><body>\xf0\xd2\xc9\xd7\xc5\xd4</body></html>\r\n"},
	{"single/html-meta-utf8", "Content-Type: text/html\r\n\r\n<meta charset=utf-8><p>Caf\xc3\xa9</p>\r\n"},
	{"single/html-no-charset-utf8", "Content-Type: text/html\r\n\r\n<p>Caf\xc3\xa9</p>\r\n"},

	// Transfer encodings.
	{"qp/soft-breaks", multipart("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nA long line that is =\r\nsoft broken, caf=C3=A9 and caf=c3=a9.\r\nTrailing spaces   \r\nTab\t\r\n=3D equals, =ZZ bad, = lone, =4")},
	{"qp/soft-break-before-boundary", multipart("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nno newline at the end=")},
	{"qp/soft-break-with-space", multipart("Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\njoined = \r\nline")},
	{"qp/raw-8bit", multipart("Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nraw Caf\xe9 and encoded Caf=E9\x01")},
	{"qp/long-line", multipart("Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + strings.Repeat("x", 1500) + "\r\nend")},
	{"qp/long-line-trailing-space", multipart("Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + strings.Repeat("y", 1020) + "        \r\nend")},
	{"qp/attachment", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: text/csv; charset=windows-1252; name=a.csv\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9;1=\r\n;2\r\n")},
	{"base64/lines", multipart("Content-Type: application/octet-stream; name=data.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64lines(binaryData))},
	{"base64/junk", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\naGVs!!bG8g d29y\tbGQ=\r\n")},
	{"base64/no-padding", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8")},
	{"base64/padding-inside", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\naGk=aGk=")},
	{"base64/8bit-junk", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\naGVs\xe9bG8=")},
	{"base64/dangling-character", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8gd")},
	{"base64/text-body", multipart("Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: BASE64\r\n\r\nQ2Fm6Q==")},
	{"base64/text-attachment", multipart("Content-Type: text/plain\r\n\r\nbody", "Content-Type: text/csv; charset=windows-1252\r\nContent-Disposition: attachment; filename=a.csv\r\nContent-Transfer-Encoding: base64\r\n\r\nQ2Fm6TsxDQo=")},
	{"cte/missing-8bit", multipart("Content-Type: text/plain; charset=utf-8\r\n\r\nCaf\xc3\xa9 \xe2\x82\xac")},
	{"cte/unknown", multipart("Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nCaf\xe9", "Content-Type: application/octet-stream; name=u.bin\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nbegin 644 u\r\nend")},
	{"cte/with-parameter", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64; x=y\r\n\r\naGVsbG8=")},
	{"cte/binary", multipart("Content-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: binary\r\n\r\n\x00\x01\x02\xff")},

	// Charsets.
	{"charset/iso-8859-1", multipart("Content-Type: text/plain; charset=iso-8859-1\r\n\r\nCaf\xe9 na\xefve")},
	{"charset/iso-8859-1-c1", multipart("Content-Type: text/plain; charset=ISO-8859-1\r\n\r\n\x80uro \x93quoted\x94")},
	{"charset/windows-1252", multipart("Content-Type: text/plain; charset=\"windows-1252\"\r\n\r\n\x80uro \x93quoted\x94")},
	{"charset/koi8-r", multipart("Content-Type: text/plain; charset=koi8-r\r\n\r\n\xf0\xd2\xc9\xd7\xc5\xd4")},
	{"charset/shift-jis", multipart("Content-Type: text/plain; charset=Shift_JIS\r\n\r\n\x82\xa8\x92\x6d\x82\xe7\x82\xb9")},
	{"charset/iso-2022-jp", multipart("Content-Type: text/plain; charset=ISO-2022-JP\r\nContent-Transfer-Encoding: 7bit\r\n\r\n\x1b$B;3ED\x1b(B")},
	{"charset/gb2312", multipart("Content-Type: text/plain; charset=gb2312\r\n\r\n\xd5\xd4\xc0\xda")},
	{"charset/big5", multipart("Content-Type: text/plain; charset=big5\r\n\r\n\xa4\xa4\xa4\xe5")},
	{"charset/euc-kr", multipart("Content-Type: text/plain; charset=euc-kr\r\n\r\n\xc7\xd1\xb1\xb9")},
	{"charset/utf-16le", multipart("Content-Type: text/plain; charset=utf-16le\r\nContent-Transfer-Encoding: base64\r\n\r\nSABpAA==")},
	{"charset/hz-gb-2312", multipart("Content-Type: text/plain; charset=hz-gb-2312\r\n\r\n~{UT@Z~}")},
	{"charset/utf-7", multipart("Content-Type: text/plain; charset=utf-7\r\n\r\nHi Mom -+Jjo--! A+ImIDkQ.")},
	{"charset/utf-7-edges", multipart("Content-Type: text/plain; charset=UTF-7\r\n\r\n1 +- 2 +ZeVnLIqe- +2D3eAQ- +AGEAYgBj end+AGE")},
	{"charset/utf-7-invalid", multipart("Content-Type: text/plain; charset=UTF-7\r\n\r\n+2D0- +3gE- caf\xe9")},
	{"charset/utf-7-header", "Subject: =?utf-7?q?Hi_+Jjo-?= =?UTF-7?B?K0FHRUFZZ0JqLQ==?=\r\n\r\nbody\r\n"},
	{"charset/utf-7-invalid-header", "Subject: =?UTF7?B?0000?=\r\n\r\nbody\r\n"},
	{"charset/aliases", multipart("Content-Type: text/plain; charset=cp-850\r\n\r\n\x82", "Content-Type: text/plain; charset=136\r\n\r\n\xa4\xa4\xa4\xe5",
		"Content-Type: text/plain; charset=238\r\n\r\n\x8a", "Content-Type: text/plain; charset=iso646-us\r\n\r\n\x80",
		"Content-Type: text/plain; charset=we8iso8859p1\r\n\r\n\xe9", "Content-Type: text/plain; charset=8859-5\r\n\r\n\xbf", "Content-Type: text/plain; charset=cp932\r\n\r\n\x82\xa0")},
	{"charset/unknown", multipart("Content-Type: text/plain; charset=x-unknown-42\r\n\r\nCaf\xc3\xa9 and Caf\xe9")},
	{"charset/repeated-name", multipart("Content-Type: text/plain; charset=\"charset=koi8-r\"\r\n\r\n\xf0\xd2\xc9\xd7\xc5\xd4")},
	{"charset/us-ascii-8bit", multipart("Content-Type: text/plain; charset=us-ascii\r\n\r\nCaf\xe9")},
	{"charset/undeclared-utf8", multipart("Content-Type: text/plain\r\n\r\nCaf\xc3\xa9")},
	{"charset/undeclared-latin1", multipart("Content-Type: text/plain\r\n\r\nCaf\xe9")},
	{"charset/undeclared-html-meta", multipart("Content-Type: text/html\r\n\r\n<meta charset=\"windows-1252\"><p>Caf\xe9</p>")},
	{"charset/no-content-type-latin1", multipart("Content-Transfer-Encoding: 8bit\r\n\r\nCaf\xe9")},
	{"charset/root-no-content-type-utf8", "Subject: plain\r\n\r\nCaf\xc3\xa9 \xe2\x82\xac\r\n"},
	{"charset/root-no-content-type-latin1", "Subject: plain\r\n\r\nCaf\xe9\r\n"},
	{"charset/root-no-content-type-ascii", "Subject: plain\r\n\r\nplain ascii\r\n"},
	{"charset/filename-koi8", multipart("Content-Type: text/plain; charset=koi8-r; name=\"\xf0\xd2\xc9.txt\"\r\nContent-Disposition: attachment; filename=\"\xf0\xd2\xc9.txt\"\r\n\r\nx")},
	{"charset/filename-word-not-utf8", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"=?utf-8?q?M=E4rz.csv?=\"\r\n\r\nx")},
	{"charset/filename-latin1-unquoted", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=M\xe4rz.csv\r\n\r\nx")},

	// Headers.
	{"header/latin1-8bit", "From: J\xfcrgen <j@example.de>\r\nSubject: Gr\xfc\xdfe\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nbody\r\n"},
	{"header/koi8-8bit", "Subject: \xf0\xd2\xc9\xd7\xc5\xd4\r\nContent-Type: text/plain;\r\n charset=\"KOI8-R\"\r\n\r\nbody\r\n"},
	{"header/folding", "Subject: first\r\n  second\r\n\tthird\r\nX-Empty:\r\nX-Spaces:    \r\nX-Fold: a\r\n   \r\n b\r\n\r\nbody\r\n"},
	{"header/no-colon-continuation", "Subject: one\r\ntwo three\r\nX-After: yes\r\n\r\nbody\r\n"},
	{"header/junk-lines", "Subject: s\r\n:no name\r\nX Spaced Name: v\r\nBad\x01Name: v\r\nX-\xc3\xa9: v\r\nX-Ok: yes\r\n\r\nbody\r\n"},
	{"header/space-before-colon", "Subject : one\r\nTo  : a@b.c\r\nX-Tab\t: t\r\n\r\nbody\r\n"},
	{"header/repeated", "Received: from a\r\nreceived: from b\r\nRECEIVED: from c\r\nX-Dup: 1\r\nX-DUP: 2\r\nx-dup: 3\r\n\r\nbody\r\n"},
	{"header/case", "SUBJECT: upper\r\nfrom: lower@example.com\r\ncontent-type: TEXT/PLAIN; CHARSET=UTF-8\r\n\r\nbody\r\n"},
	{"header/many-distinct", manyHeaders(600, 0)},
	{"header/many-repeated", manyHeaders(10, 2000)},
	{"header/long-value", "Subject: " + strings.Repeat("long ", 20000) + "\r\n\r\nbody\r\n"},
	{"header/starts-folded", " folded first\r\nSubject: x\r\n\r\nbody\r\n"},
	{"header/no-headers", "just some text without any header\r\nsecond line\r\n"},
	{"header/only-headers", "Subject: only\r\nX-A: b"},
	{"header/blank-first", "\r\nbody without headers\r\n"},
	{"header/encoded-words", "Subject: =?UTF-8?B?SsO8cmdlbg==?= =?ISO-8859-1?Q?Andr=E9?= =?x-unknown?q?x?=\r\nX-A: =?utf-8?q?a=FFb?=\r\nX-B: =?windows-1252?Q?=93hi=94?= and =?koi8-r?b?8NLJ18XU?=\r\n\r\nbody\r\n"},
	{"header/encoded-latin1-c1", "From: =?ISO-8859-1?Q?=80uro?= <e@example.com>\r\nSubject: =?iso-8859-1?q?=80uro?= =?latin1?q?=80?= =?iso88591?q?=93x=94?=\r\n\r\nbody\r\n"},
	{"header/encoded-charset-aliases", "Subject: =?cp-850?q?=82?= =?136?b?pKSk5Q==?= =?238?q?=8A?= =?iso646-us?q?=80?= =?we8iso8859p1?q?=E9?= =?8859-2?q?=A1?= =?cp932?b?gqA=?=\r\n\r\nbody\r\n"},
	{"header/encoded-word-language", "From: =?US-ASCII*EN?Q?Keith_Moore?= <moore@cs.utk.edu>\r\nSubject: =?utf-8*de?q?M=C3=A4rz?= =?iso-8859-1*fr?q?caf=E9?=\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nbody\r\n" +
		"--b\r\nContent-Type: application/pdf; name=\"=?utf-8*en?b?4oKsLnBkZg==?=\"\r\n\r\nx\r\n--b--\r\n"},
	{"header/nul", "Subject: a\x00b\r\nX-A: \x00\r\n\r\nbody \x00\r\n"},

	// Addresses.
	{"address/simple", "From: \"Doe, John\" <john@example.com>\r\nTo: a@example.com, B <b@example.com>\r\nCc: c@example.com\r\n\r\nbody\r\n"},
	{"address/spaces", "From: a@example.com b@example.com\r\nTo: x@example.com y@example.com\r\n\r\nbody\r\n"},
	{"address/semicolons", "To: x@example.com; y@example.com;\r\nCc: A <a@example.com>; B <b@example.com>\r\n\r\nbody\r\n"},
	{"address/group", "To: undisclosed-recipients:;\r\nCc: team: a@example.com, b@example.com;\r\n\r\nbody\r\n"},
	{"address/encoded", "From: =?utf-8?q?J=C3=BCrgen?= <j@example.com>\r\nTo: \"=?utf-8?b?w5xi?=\" <u@example.com>\r\n\r\nbody\r\n"},
	{"address/broken", "From: not an address <<<\r\nTo: ,,, @@, \"Unclosed <q@example.com>\r\n\r\nbody\r\n"},
	{"address/empty-from", "From: \r\nTo:\r\n\r\nbody\r\n"},
	{"address/utf8", "From: Jürgen <jürgen@bücher.example>\r\nTo: δοκιμή@παράδειγμα.δοκιμή\r\n\r\nbody\r\n"},
	{"address/repeated-to", "To: first@example.com\r\nTo: second@example.com\r\n\r\nbody\r\n"},
	{"address/many", manyAddresses(1200)},

	// Parameters.
	{"param/rfc2231", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''%E2%82%AC%20rates.pdf\r\n\r\nx", "Content-Type: application/octet-stream\r\nContent-Disposition: attachment;\r\n filename*0*=UTF-8''%E6%97%A5%E6%9C%AC;\r\n filename*1=\"part.txt\"\r\n\r\nx")},
	{"param/rfc2231-latin1", multipart("Content-Type: application/octet-stream; name=fallback.bin\r\nContent-Disposition: attachment; filename*=iso-8859-1''M%E4rz.csv\r\n\r\nx")},
	{"param/name-only", multipart("Content-Type: application/pdf; name=\"only-name.pdf\"\r\n\r\n%PDF")},
	{"param/file", multipart("Content-Type: application/octet-stream; file=\"file-param.bin\"\r\n\r\nx")},
	{"param/encoded-word-name", multipart("Content-Type: application/octet-stream; name=\"=?utf-8?B?w5xiZXJzaWNodC54bHN4?=\"\r\n\r\nx")},
	{"param/unquoted-spaces", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=my file (1).pdf\r\n\r\nx")},
	{"param/unclosed-quote", multipart("Content-Type: application/octet-stream; name=n.bin\r\nContent-Disposition: attachment; filename=\"unclosed.pdf\r\n\r\nx")},
	{"param/inner-quotes", multipart("Content-Type: application/rtf; name=\"\"V047411.rtf\".rtf\"\r\n\r\nx")},
	{"param/duplicate", multipart("Content-Type: text/plain; charset=koi8-r; charset=utf-8\r\n\r\n\xf0\xd2")},
	{"param/missing-semicolon", multipart("Content-Type: text/plain charset=utf-8\r\n\r\nCaf\xc3\xa9")},
	{"param/no-subtype", multipart("Content-Type: text/\r\n\r\nplain", "Content-Type: image/\r\nContent-Disposition: attachment\r\n\r\nx")},
	{"param/only-parameters", multipart("Content-Type: charset=utf-8\r\n\r\nbody")},
	{"param/garbage-type", multipart("Content-Type: text/plain\r\n\r\nfirst", "Content-Type: text plain\r\n\r\nsecond")},
	{"param/garbage-root-type", "Content-Type: text plain\r\nSubject: s\r\n\r\nbody\r\n"},
	{"param/value-without-name", multipart("Content-Type: application/octet-stream; =x; name=ok.bin; broken\r\n\r\nx")},
	{"param/trailing-semicolon", multipart("Content-Type: application/octet-stream; name=ok.bin;\r\n\r\nx")},
	{"param/disposition-without-type", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: filename=\"f.bin\"\r\nContent-ID: <c@x>\r\n\r\nx")},
	{"param/quoted-semicolon", multipart("Content-Type: application/octet-stream; name=\"a;b.pdf\"\r\n\r\nx")},
	{"param/unquoted-encoded-word", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename==?utf-8?b?w5xiLnBkZg==?=\r\n\r\nx")},
	{"param/double-semicolon", multipart("Content-Type: text/plain;; charset=koi8-r;;\r\n\r\n\xf0\xd2")},
	{"param/spaces-around-equals", multipart("Content-Type: text/plain; charset = \"koi8-r\"\r\n\r\n\xf0\xd2")},
	{"param/trailing-comma", multipart("Content-Type: text/plain; charset=koi8-r,\r\n\r\n\xf0\xd2")},
	{"param/upper-case-names", multipart("Content-Type: TEXT/PLAIN; CHARSET=KOI8-R\r\n\r\n\xf0\xd2", "Content-Type: Application/PDF; NAME=\"Upper.PDF\"\r\n\r\n%PDF")},
	{"param/trailing-html", "Content-Type: text/html; charset=iso-8859-1<br>\r\n\r\n<p>Caf\xe9</p>\r\n"},
	{"param/junk-after-quote", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"report.pdf\" (1)\r\n\r\nx")},
	{"param/body-in-header", "Subject: s\r\nContent-Type: text/html\r\n<p>Caf\xc3\xa9</p>\r\n"},
	{"param/path-name", multipart("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"C:\\dir\\file.txt\"\r\n\r\nx")},

	// Content-ID.
	{"cid/plain", multipart("Content-Type: text/html\r\n\r\n<img src=cid:a>", "Content-Type: image/png\r\nContent-ID: <a@x>\r\n\r\npng")},
	{"cid/no-brackets", multipart("Content-Type: image/png\r\nContent-ID: bare@x\r\n\r\npng")},
	{"cid/url-characters", multipart("Content-Type: image/png\r\nContent-ID: <a+b%41@x>\r\n\r\npng")},

	// Limits.
	{"limit/attachments", manyParts(1005)},
	{"limit/parts", manyParts(10005)},
}

package message

import (
	"bytes"
	"mime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDecodeHeader(t *testing.T) {
	for _, c := range []struct{ in, charset, want string }{
		{"plain", "", "plain"},
		{"=?UTF-8?B?SsO8cmdlbg==?=", "", "Jürgen"},
		{"=?utf-8?q?Gr=C3=BC=C3=9Fe?= und mehr", "", "Grüße und mehr"},
		{"=?UTF-8?Q?a?= =?UTF-8?Q?b?=", "", "ab"}, // RFC 2047 section 6.2: space between words dropped
		{"=?UTF-8?Q?a?=  x  =?UTF-8?Q?b?=", "", "a  x  b"},
		{"=?ISO-8859-1?Q?Andr=E9?=", "", "André"},
		{"=?iso-8859-1?q?=93hi=94_=80?=", "", "“hi” €"}, // ISO-8859-1 is read as Windows-1252
		{"=?iso-8859-15?q?=A4?=", "", "€"},
		{"=?windows-1252?Q?=93hi=94?=", "", "“hi”"},
		{"=?Shift_JIS?B?gqiSbYLngrk=?=", "", "お知らせ"},
		{"=?ISO-2022-JP?B?GyRCOzNFRBsoQg==?=", "", "山田"},
		{"=?GB2312?B?1dTA2g==?=", "", "赵磊"},
		{"=?KOI8-R?B?6dfBzg==?=", "", "Иван"},
		{"=?x-unknown?Q?kept?=", "", "=?x-unknown?Q?kept?="},
		{"=?US-ASCII*EN?Q?Keith_Moore?=", "", "Keith Moore"}, // RFC 2231 section 5: a language after '*'
		{"=?utf-8*de?q?M=C3=A4rz?=", "", "März"},
		{"=?x-unknown*en?Q?kept?=", "", "=?x-unknown*en?Q?kept?="},
		{"=?UTF-8?B?not base64!?=", "", "=?UTF-8?B?not base64!?="},
		{"Caf\xe9", "", "Café"},           // raw Latin-1: Windows-1252 by default
		{"\xf0\xf2\xe9", "koi8-r", "ПРИ"}, // raw bytes read in the declared charset
		{"  spaced \x00 ", "", "spaced"},
	} {
		if got := decodeHeader(c.in, c.charset); got != c.want {
			t.Errorf("decodeHeader(%q, %q) = %q, want %q", c.in, c.charset, got, c.want)
		}
	}
}

func TestCleanFilename(t *testing.T) {
	for _, c := range []struct{ in, charset, want string }{
		{"report.pdf", "", "report.pdf"},
		{"Rechnung März €.pdf", "", "Rechnung März €.pdf"},
		{"=?utf-8?B?w5xiZXJzaWNodC54bHN4?=", "", "Übersicht.xlsx"},
		{"../../etc/passwd", "", "passwd"},
		{`C:\Users\me\evil.exe`, "", "evil.exe"},
		{"dir/", "", ""},
		{"..", "", ""},
		{".env", "", ".env"},
		{"a\r\nb\tc.txt", "", "a b c.txt"},
		{"invoice\u202efdp.exe", "", "invoice fdp.exe"}, // no right-to-left override
		{"👩\u200d💻.png", "", "👩\u200d💻.png"},            // joiners kept
		{"Abrechnung M\xe4rz.csv", "", "Abrechnung März.csv"},
		{"\xf0\xf2\xe9.txt", "koi8-r", "ПРИ.txt"},
		{"   ", "", ""},
		{strings.Repeat("é", 300) + ".txt", "", strings.Repeat("é", 255)},
	} {
		if got := cleanFilename(c.in, c.charset); got != c.want {
			t.Errorf("cleanFilename(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestUTF8Headers(t *testing.T) {
	valid := []byte("Subject: Grüße\r\nTo: δοκιμή@x\r\n\r\nbody \xff stays\r\n")
	if got := utf8Headers(valid); &got[0] != &valid[0] {
		t.Error("a UTF-8 header block was copied")
	}
	latin := []byte("Subject: Gr\xfc\xdfe\r\nX-Ok: Grüße\r\n\r\nbody \xfc stays\r\n")
	if got := string(utf8Headers(latin)); got != "Subject: Grüße\r\nX-Ok: Grüße\r\n\r\nbody \xfc stays\r\n" {
		t.Errorf("latin-1 headers: %q", got)
	}
	koi := []byte("Subject: \xf0\xd2\xc9\xd7\xc5\xd4\r\nContent-Type: text/plain;\r\n charset=\"KOI8-R\"\r\n\r\n")
	if got := string(utf8Headers(koi)); !strings.HasPrefix(got, "Subject: Привет\r\n") {
		t.Errorf("koi8-r headers: %q", got)
	}
	p := Parse(latin)
	if p.Subject != "Grüße" || p.Headers["subject"] != "Grüße" {
		t.Errorf("Parsed subject %q, header %q", p.Subject, p.Headers["subject"])
	}
}

func TestTransferDecode(t *testing.T) {
	for _, c := range []struct{ cte, in, want string }{
		{"base64", "aGVs\r\nbG8=\r\n", "hello"},
		{"base64", "aGV!!sbG8", "hello"},
		{"quoted-printable", "caf=C3=A9=\r\n!", "café!"},
		{"7bit", "as is", "as is"},
		{"", "as is", "as is"},
	} {
		got, ok := decodeTransfer(c.cte, []byte(c.in))
		if !ok || string(got) != c.want {
			t.Errorf("decodeTransfer(%s, %q) = %q, %v", c.cte, c.in, got, ok)
		}
	}
	if got, ok := decodeTransfer("x-uuencode", []byte("x")); ok || string(got) != "x" {
		t.Error("an unknown encoding was not kept as it is")
	}
}

// decodeHeaderSeeds are the seed corpus of FuzzDecodeHeader, which the
// differential test also reads (as headerMessage).
var decodeHeaderSeeds = []string{
	"=?UTF-8?B?SsO8cmdlbg==?=", "=?iso-8859-1?q?caf=E9?= x", "=?x?y?z?=", "Caf\xe9", "\x00\xff=?",
	"=?UTF-8?Q?a?= =?UTF-8?Q?b?=", "=?ISO-2022-JP?B?GyRCOzNFRBsoQg==?=", "=?utf-8?b?====?=",
}

// headerMessage is the message FuzzDecodeHeader parses for a header value v.
func headerMessage(v string) []byte {
	line := strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
	return []byte("Subject: " + line + "\r\nX-Test: " + line + "\r\n\r\nbody\r\n")
}

// FuzzDecodeHeader checks header decoding on any input: the result is what the
// API may return (valid UTF-8, no NUL, trimmed), and a message carrying the value
// in its headers parses into the same kind of strings.
func FuzzDecodeHeader(f *testing.F) {
	for _, s := range decodeHeaderSeeds {
		f.Add(s, "")
		f.Add(s, "koi8-r")
	}
	f.Fuzz(func(t *testing.T, v, charset string) {
		got := decodeHeader(v, charset)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || got != strings.TrimSpace(got) {
			t.Fatalf("decodeHeader(%q, %q) = %q", v, charset, got)
		}
		p := Parse(headerMessage(v))
		for k, h := range p.Headers {
			if !utf8.ValidString(h) || strings.IndexByte(h, 0) >= 0 {
				t.Fatalf("header %s = %q", k, h)
			}
		}
		if !utf8.ValidString(p.Subject) {
			t.Fatalf("subject %q", p.Subject)
		}
	})
}

// filenameSeeds are the seed corpus of FuzzFilename, which the differential test
// also reads (as filenameMessage).
var filenameSeeds = []string{"report.pdf", "../../x", `C:\a\b.exe`, "a\u202eb", "M\xe4rz.csv", "=?utf-8?B?w5w=?=", "", ".", "\x00"}

// filenameMessage is the message FuzzFilename parses for a file name.
func filenameMessage(name string) []byte {
	return []byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\n" +
		"Content-Disposition: " + mime.FormatMediaType("attachment", map[string]string{"filename": name}) + "\r\n\r\nx\r\n--b--\r\n")
}

// FuzzFilename checks file name handling on any input: the name is safe to offer
// as a download (the inbox's FuzzDownloadName checks that it can be), and a name
// sent in a part header comes back the same way.
func FuzzFilename(f *testing.F) {
	for _, s := range filenameSeeds {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, name, charset string) {
		got := cleanFilename(name, charset)
		if !utf8.ValidString(got) || strings.ContainsAny(got, `/\`) || got == "." || got == ".." ||
			utf8.RuneCountInString(got) > maxFilenameRunes || got != strings.TrimSpace(got) {
			t.Fatalf("cleanFilename(%q, %q) = %q", name, charset, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || (unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d') {
				t.Fatalf("cleanFilename(%q) kept %U", name, r)
			}
		}
		if got == "" {
			return
		}
		// The same name in a part header comes back the same way (unless it looks
		// like an RFC 2047 word, which the parser decodes leniently).
		if strings.Contains(got, "=?") {
			return
		}
		if mime.FormatMediaType("attachment", map[string]string{"filename": got}) == "" {
			return
		}
		p := Parse(filenameMessage(got))
		if len(p.Attachments) != 1 || !bytes.Equal(p.Attachments[0].Data, []byte("x")) {
			t.Fatalf("part named %q: attachments %+v", got, p.Attachments)
		}
		if p.Attachments[0].Filename != cleanFilename(got, "") {
			t.Fatalf("part named %q came back as %q", got, p.Attachments[0].Filename)
		}
	})
}

package message

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadHeader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []headerField
		body     string
		ok       bool
	}{
		{"simple", "A: 1\r\nB-Two: x y \r\n\r\nbody", []headerField{{"A", "1"}, {"B-Two", "x y"}}, "body", true},
		{"lf", "A: 1\nB: 2\n\nbody\n", []headerField{{"A", "1"}, {"B", "2"}}, "body\n", true},
		{"folded", "Subject: one\r\n  two\r\n\tthree\r\n\r\n", []headerField{{"Subject", "one two three"}}, "", true},
		{"fold without indentation", "Subject: one\r\ntwo three\r\nX: y\r\n\r\n", []headerField{{"Subject", "one two three"}, {"X", "y"}}, "", true},
		{"junk lines dropped", "A: 1\r\n:x\r\nB\x01ad: 2\r\nC: 3\r\n\r\n", []headerField{{"A", "1"}, {"C", "3"}}, "", true},
		{"space before colon", "Subject : s\r\nTo  : t\r\n\r\n", []headerField{{"Subject", "s"}, {"To ", "t"}}, "", true},
		{"empty value", "A:\r\nB:   \r\n\r\n", []headerField{{"A", ""}, {"B", ""}}, "", true},
		{"no blank line", "A: 1\r\nB: 2", []headerField{{"A", "1"}, {"B", "2"}}, "", true},
		{"blank first", "\r\nbody", nil, "body", true},
		// A line of a lone CR is not blank: it folds, and so does the body.
		{"cr cr lf", "A: 1\r\r\nB: 2\r\r\n\r\r\nbody", []headerField{{"A", "1"}, {"B", "2  body"}}, "", true},
		{"starts folded", " A: 1\r\n\r\n", nil, "", false},
		{"starts without colon", "hello\r\nA: 1\r\n\r\n", nil, "", false},
		{"empty", "", nil, "", true},
	} {
		h, off, ok := readHeader([]byte(c.in))
		if ok != c.ok || !ok {
			if ok != c.ok {
				t.Errorf("%s: ok = %v", c.name, ok)
			}
			continue
		}
		if len(h)+len(c.want) > 0 && !reflect.DeepEqual([]headerField(h), c.want) || c.in[off:] != c.body {
			t.Errorf("%s: %q, body %q; want %q, %q", c.name, h, c.in[off:], c.want, c.body)
		}
	}
}

func TestSplitMultipart(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"simple", "--b\r\nA: 1\r\n\r\none\r\n--b\r\n\r\ntwo\r\n--b--\r\n", []string{"A: 1\r\n\r\none", "\r\ntwo"}},
		{"lf", "--b\nA: 1\n\none\n--b--\n", []string{"A: 1\n\none"}},
		{"preamble and epilogue", "pre\r\n--b\r\n\r\none\r\n--b--\r\nepi\r\n--b\r\n\r\nlost\r\n", []string{"\r\none"}},
		{"trailing white space", "--b  \r\n\r\none\r\n--b\t\r\n\r\ntwo\r\n--b--  \r\n", []string{"\r\none", "\r\ntwo"}},
		{"missing close", "--b\r\n\r\none\r\n--b\r\n\r\nto the end\r\n", []string{"\r\none", "\r\nto the end\r\n"}},
		{"blank line before delimiter kept", "--b\r\n\r\none\r\n\r\n--b--", []string{"\r\none\r\n"}},
		{"empty parts", "--b\r\n--b\r\n\r\n--b--", []string{"", ""}},
		{"not at line start", "--b\r\n\r\na --b b\r\n --b\r\n--bx\r\n--b--", []string{"\r\na --b b\r\n --b\r\n--bx"}},
		{"cut after delimiter", "--b\r\n\r\none\r\n--b\r\n", []string{"\r\none", ""}},
		{"cut in delimiter", "--b\r\n\r\none\r\n--b", []string{"\r\none\r\n--b"}},
		{"delimiter without line end", "--b\r\n\r\none\r\n--b  ", []string{"\r\none"}},
		{"lf delimiter at the end", "--b\n\none\n--b\n", []string{"\none\n--b\n"}},
		{"cr cr lf", "--b\r\r\n\r\r\none\r\r\n--b--\r\r\n", []string{"\r\r\none\r"}},
		{"cr cr lf before delimiter", "--b\r\n\r\none\r\r\n--b\r\n\r\ntwo\r\n--b--", []string{"\r\none", "\r\ntwo"}},
		{"no delimiter", "just text\r\n", nil},
		{"close first", "--b--\r\n--b\r\n\r\nx\r\n", nil},
	} {
		var got []string
		for _, p := range splitMultipart([]byte(c.body), "b") {
			got = append(got, string(p))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParseMediaType(t *testing.T) {
	for _, c := range []struct {
		in, mtype string
		params    map[string]string
		ok        bool
	}{
		{"", "", nil, true},
		{`text/plain; charset="utf-8"`, "text/plain", map[string]string{"charset": "utf-8"}, true},
		{"multipart/mixed; boundary=----=_Part_1.2", "multipart/mixed", map[string]string{"boundary": "----=_Part_1.2"}, true},
		{"attachment; filename=my file (1).pdf", "attachment", map[string]string{"filename": "my file (1).pdf"}, true},
		{`attachment; filename="unclosed.pdf`, "attachment", map[string]string{"filename": "unclosed.pdf"}, true},
		{`application/rtf; name=""V047411.rtf".rtf"`, "application/rtf", map[string]string{"name": `"V047411.rtf".rtf`}, true},
		{"text/plain; charset=koi8-r; charset=utf-8", "text/plain", map[string]string{"charset": "koi8-r"}, true},
		{"text/plain charset=utf-8", "text/plain", map[string]string{"charset": "utf-8"}, true},
		{"charset=utf-8", "application/octet-stream", map[string]string{"charset": "utf-8"}, true},
		{"text/", "text/plain", map[string]string{}, true},
		{"image/; name=a", "application/octet-stream", map[string]string{"name": "a"}, true},
		{"text/plain/extra; x=1", "text/plain", map[string]string{"x": "1"}, true},
		{"TEXT/HTML; CHARSET=X", "text/html", map[string]string{"charset": "X"}, true},
		{"attachment; filename=M\xe4rz.csv", "attachment", map[string]string{"filename": "M\xe4rz.csv"}, true},
		{"a; =x; broken; b c=1; ok=2", "a", map[string]string{"ok": "2"}, true},
		{`a; name*=utf-8''%E2%82%AC.txt; x*0=one; x*1*=%20two`, "a", map[string]string{"name": "€.txt", "x": "one two"}, true},
		{`a; name*=iso-8859-1''%E4.txt; z=1`, "a", map[string]string{"z": "1"}, true},
		{`a; path="C:\dir\f.txt"; q="\"x\" \\"`, "a", map[string]string{"path": `C:\dir\f.txt`, "q": `"x" \`}, true},
		{"text/html; charset=iso-8859-1<br>", "text/html", map[string]string{"charset": "iso-8859-1"}, true},
		{`attachment; filename="a.pdf" (1); size=3`, "attachment", map[string]string{"filename": "a.pdf", "size": "3"}, true},
		{"text/html <p>body</p>", "", nil, false},
		{"text plain", "", nil, false},
		{"text/pl ain; x=1", "", nil, false},
	} {
		mtype, params, ok := parseMediaType(c.in)
		if ok != c.ok || ok && (mtype != c.mtype || len(params)+len(c.params) > 0 && !reflect.DeepEqual(params, c.params)) {
			t.Errorf("parseMediaType(%q) = %q %q %v; want %q %q %v", c.in, mtype, params, ok, c.mtype, c.params, c.ok)
		}
	}
}

func TestDecodeQuotedPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"caf=C3=A9 caf=c3=a9", "café café"},
		{"soft =\r\nbreak", "soft break"},
		{"soft =\nbreak", "soft break"},
		{"soft with space = \t\r\nbreak", "soft with space break"},
		{"at the end=", "at the end"},
		{"trailing   \r\nspace\t\n", "trailing\r\nspace\n"},
		{"=3D =ZZ =4 = x =", "= =ZZ =4 = x "},
		{"raw \xe9 \x01 kept", "raw \xe9 \x01 kept"},
		{"a\r\n\r\nb", "a\r\n\r\nb"},
		{"cr cr lf\r\r\nx", "cr cr lf\r\nx"},
		{"", ""},
	} {
		if got := string(decodeQuotedPrintable([]byte(c.in))); got != c.want {
			t.Errorf("decodeQuotedPrintable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecodeBase64(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"aGVsbG8=", "hello"},
		{"aGVs\r\nbG8=\r\n", "hello"},
		{"aGVsbG8", "hello"},
		{"aGVs!!bG8g d29y\tbGQ=", "hello world"},
		{"aGVs\xe9bG8=", "hello"},
		{"aGk=aGk=", "hi\x1a\x1a"}, // padding inside is skipped too
		{"aGVsbG8gd", "hello "},
		{"====", ""},
		{"", ""},
	} {
		if got := string(decodeBase64([]byte(c.in))); got != c.want {
			t.Errorf("decodeBase64(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTextToUTF8(t *testing.T) {
	for _, c := range []struct {
		in, charset string
		html        bool
		want        string
	}{
		{"Caf\xc3\xa9", "utf-8", false, "Café"},
		{"Caf\xe9", "iso-8859-1", false, "Café"},
		{"\x80", "ISO-8859-1", false, "€"},
		{"\xf0\xd2\xc9", `"KOI8-R"`, false, "При"},
		{"\xf0\xd2\xc9", "charset=koi8-r", false, "При"},
		{"Caf\xe9", "x-unknown", false, "Caf\xe9"},
		{"Caf\xc3\xa9", "", false, "Café"},
		{"Caf\xe9", "", false, "Café"},
		{"Hi +Jjo-", "utf-7", false, "Hi ☺"},
		{"~{UT@Z~}", "hz-gb-2312", false, "赵磊"},
		{`<meta charset="koi8-r"><p>` + "\xf0\xd2\xc9", "", true, `<meta charset="koi8-r"><p>При`},
		{`<META http-equiv="Content-Type" content="text/html; charset=windows-1252">` + "\x93", "", true, `<META http-equiv="Content-Type" content="text/html; charset=windows-1252">“`},
		{`<meta charset="koi8-r">` + "\xf0", "utf-8", true, `<meta charset="koi8-r">` + "\xf0"},
		{`<meta charset="koi8-r">` + "\xf0", "", false, `<meta charset="koi8-r">ð`},
	} {
		if got := textToUTF8([]byte(c.in), c.charset, c.html); got != c.want {
			t.Errorf("textToUTF8(%q, %q, %v) = %q, want %q", c.in, c.charset, c.html, got, c.want)
		}
	}
}

func TestHTMLMetaCharset(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`<meta charset="utf-8">`, "utf-8"},
		{`<META CHARSET=iso-8859-2>`, "iso-8859-2"},
		{`<meta http-equiv="Content-Type" content="text/html; charset=windows-1252" />`, "windows-1252"},
		{"<meta name=x>\n<p>charset=no</p>", ""},
		{"<meta charset=\"\n  koi8-r\">", "koi8-r"},
		{`<meta charset='x'><meta charset="y">`, "y"},
		{`<p>no meta</p>`, ""},
	} {
		if got := htmlMetaCharset([]byte(c.in)); got != c.want {
			t.Errorf("htmlMetaCharset(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestUTF7(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Hi Mom -+Jjo--!", "Hi Mom -☺-!"},
		{"A+ImIDkQ.", "A≢Α."},
		{"1 +- 2", "1 + 2"},
		{"+ZeVnLIqe-", "日本語"},
		{"+2D3eAQ-", "😁"},
		{"end+AGE", "enda"},
		{"+2D0- +3gE- \xe9", "\uFFFD \uFFFD \uFFFD"},
		{strings.Repeat("+AGE-", 2000), strings.Repeat("a", 2000)},
	} {
		got, err := utf7.NewDecoder().String(c.in)
		if err != nil || got != c.want {
			t.Errorf("UTF-7 %.40q = %.40q, %v; want %.40q", c.in, got, err, c.want)
		}
	}
}

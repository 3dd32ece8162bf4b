package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// keyword is a word that says what a number beside it is, lower case. A
// positive one names a one-time code; a negative one names something a person
// does not type to sign in (an order, an invoice, a phone number, a price).
type keyword struct {
	word     string
	positive bool
	// bound says where the word must start or end a word: short words are
	// parts of longer ones ("pin" in "shipping"), while most match inside
	// compounds on purpose ("code" in "Bestätigungscode", "verificatiecode").
	bound bound
	// qualifies marks a negative word that makes a code word next to it
	// negative too ("promo code", "ZIP code", "tracking code"), and that
	// refuses a code it closely follows ("THANKS10 for 10 % off").
	qualifies bool
}

type bound uint8

const (
	boundNone  bound = 0
	boundStart bound = 1 // "kod" in "kodunuz", not in "epizod"
	boundBoth  bound = 3
)

// codeWords are the keywords, for English and the languages most mail is
// written in: German, French, Spanish, Portuguese, Italian, Dutch, the
// Scandinavian languages, Polish, Turkish, Russian, Ukrainian, Greek, Hebrew,
// Arabic, Hindi, Indonesian, Vietnamese, Thai, Japanese, Chinese and Korean.
var codeWords = []keyword{
	// one-time codes
	{word: "code", positive: true},
	{word: "verifica", positive: true}, // verification, verificación, verificação, verificatie, verifica
	{word: "verify", positive: true},
	{word: "vérif", positive: true},
	{word: "verifizier", positive: true},
	{word: "verifier", positive: true}, // verifiering, verifieren
	{word: "passcode", positive: true},
	{word: "password", positive: true},
	{word: "one-time", positive: true},
	{word: "one time", positive: true},
	{word: "otp", positive: true, bound: boundBoth},
	{word: "pin", positive: true, bound: boundBoth},
	{word: "2fa", positive: true, bound: boundBoth},
	{word: "mfa", positive: true, bound: boundBoth},
	{word: "two-factor", positive: true},
	{word: "bestätigung", positive: true},
	{word: "passwort", positive: true},
	{word: "kennwort", positive: true},
	{word: "tan", positive: true, bound: boundBoth},
	{word: "mot de passe", positive: true},
	{word: "usage unique", positive: true},
	{word: "código", positive: true},
	{word: "codigo", positive: true},
	{word: "contraseña", positive: true},
	{word: "clave", positive: true, bound: boundStart},
	{word: "senha", positive: true, bound: boundBoth},
	{word: "codice", positive: true},
	{word: "wachtwoord", positive: true},
	{word: "kod", positive: true, bound: boundStart}, // pl, sv, tr (kodunuz), da and no (kode)
	{word: "engångs", positive: true},
	{word: "hasło", positive: true},
	{word: "hasła", positive: true},
	{word: "weryfikac", positive: true},
	{word: "doğrulama", positive: true},
	{word: "şifre", positive: true},
	{word: "код", positive: true, bound: boundStart},
	{word: "пароль", positive: true},
	{word: "подтвержд", positive: true},
	{word: "κωδικ", positive: true},
	{word: "קוד", positive: true},
	{word: "رمز", positive: true},
	{word: "كود", positive: true},
	{word: "التحقق", positive: true},
	{word: "कोड", positive: true},
	{word: "ओटीपी", positive: true},
	{word: "सत्यापन", positive: true},
	{word: "kode", positive: true},
	{word: "verifikasi", positive: true},
	{word: "mã", positive: true, bound: boundBoth},
	{word: "xác minh", positive: true},
	{word: "xác thực", positive: true},
	{word: "xác nhận", positive: true},
	{word: "รหัส", positive: true},
	{word: "コード", positive: true},
	{word: "認証", positive: true},
	{word: "確認番号", positive: true},
	{word: "暗証", positive: true},
	{word: "ワンタイム", positive: true},
	{word: "パスワード", positive: true},
	{word: "验证", positive: true},
	{word: "驗證", positive: true},
	{word: "校验码", positive: true},
	{word: "动态码", positive: true},
	{word: "密码", positive: true},
	{word: "密碼", positive: true},
	{word: "인증", positive: true},
	{word: "코드", positive: true},
	{word: "비밀번호", positive: true},

	// Labels of numbers that are not codes. Latin-script ones must start a
	// word ("order" is not in "border"); the others, in scripts written
	// without spaces, cannot.
	{word: "order", bound: boundStart}, {word: "bestell", bound: boundStart},
	{word: "commande", bound: boundStart}, {word: "pedido", bound: boundStart},
	{word: "ordine", bound: boundStart}, {word: "zamówieni", bound: boundStart},
	{word: "sipariş", bound: boundStart}, {word: "заказ", bound: boundStart},
	{word: "注文"}, {word: "订单"}, {word: "訂單"}, {word: "주문"},
	{word: "invoice", bound: boundStart}, {word: "rechnung", bound: boundStart},
	{word: "facture", bound: boundStart}, {word: "factura", bound: boundStart},
	{word: "fattura", bound: boundStart}, {word: "factuur", bound: boundStart},
	{word: "faktura", bound: boundStart}, {word: "счет", bound: boundStart}, {word: "счёт", bound: boundStart},
	{word: "請求"}, {word: "发票"},
	{word: "receipt", bound: boundStart}, {word: "quittung", bound: boundStart},
	{word: "reçu", bound: boundStart}, {word: "recibo", bound: boundStart}, {word: "ricevuta", bound: boundStart},
	{word: "reference", bound: boundStart}, {word: "référence", bound: boundStart},
	{word: "referenz", bound: boundStart}, {word: "referencia", bound: boundStart},
	{word: "riferimento", bound: boundStart}, {word: "ref", bound: boundBoth},
	{word: "tracking", bound: boundStart, qualifies: true}, {word: "sendung", bound: boundStart},
	{word: "shipment", bound: boundStart}, {word: "parcel", bound: boundStart},
	{word: "ticket", bound: boundStart}, {word: "case", bound: boundBoth}, {word: "id", bound: boundBoth},
	{word: "customer", bound: boundStart}, {word: "kunden", bound: boundStart},
	{word: "member", bound: boundStart}, {word: "account", bound: boundStart},
	{word: "booking", bound: boundStart, qualifies: true}, {word: "reservation", bound: boundStart, qualifies: true},
	{word: "phone", bound: boundStart}, {word: "telefon", bound: boundStart},
	{word: "tel", bound: boundBoth}, {word: "fax", bound: boundBoth}, {word: "call", bound: boundBoth},
	{word: "zip", bound: boundBoth, qualifies: true}, {word: "postcode", bound: boundStart},
	{word: "postal", bound: boundStart, qualifies: true}, {word: "post", bound: boundBoth, qualifies: true},
	{word: "plz", bound: boundBoth},
	{word: "promo", bound: boundStart, qualifies: true}, {word: "coupon", bound: boundStart, qualifies: true},
	{word: "discount", bound: boundStart, qualifies: true}, {word: "voucher", bound: boundStart, qualifies: true},
	{word: "gift", bound: boundStart, qualifies: true}, {word: "rabatt", bound: boundStart, qualifies: true},
	{word: "gutschein", bound: boundStart, qualifies: true}, {word: "referral", bound: boundStart, qualifies: true},
	{word: "invite", bound: boundStart, qualifies: true},
	{word: "barcode", bound: boundStart}, {word: "sku", bound: boundBoth}, {word: "item", bound: boundStart},
	{word: "qty", bound: boundBoth}, {word: "quantity", bound: boundStart}, {word: "total", bound: boundStart},
	{word: "amount", bound: boundStart}, {word: "price", bound: boundStart}, {word: "subtotal", bound: boundStart},
	{word: "tax", bound: boundBoth}, {word: "vat", bound: boundBoth}, {word: "iban", bound: boundBoth},
	{word: "card", bound: boundStart}, {word: "ending", bound: boundBoth},
	{word: "off", bound: boundBoth, qualifies: true}, {word: "summe", bound: boundStart},
	{word: "betrag", bound: boundStart}, {word: "datum", bound: boundStart}, {word: "date", bound: boundBoth},
	{word: "no", bound: boundBoth}, {word: "nr", bound: boundBoth}, {word: "n°"}, {word: "nº"},
}

// match is one keyword found in a lower-cased line: its bytes start to end (to
// the end of the word it is in).
type match struct {
	start, end int
	positive   bool
	qualifies  bool // a negative word such as "promo" or "off" (see keyword)
	found      bool
}

// wordsByFirstByte indexes codeWords by their first byte, so that a line is
// read once for all of them, and startsWord tells, from a position's first two
// bytes, whether any of them can start there: most positions of a line are
// passed over with one look-up.
var (
	wordsByFirstByte [256][]int
	startsWord       [1 << 16]bool
)

func init() {
	for i, k := range codeWords {
		wordsByFirstByte[k.word[0]] = append(wordsByFirstByte[k.word[0]], i)
		startsWord[uint16(k.word[0])<<8|uint16(k.word[1])] = true
	}
}

// keywordMatches returns the keywords of lower, ordered by position. A positive
// word inside a negative one ("code" in "barcode") is dropped, and one right
// after a qualifying negative word ("promo code") turns negative.
func keywordMatches(lower string) []match {
	var ms []match
	for i := 0; i+1 < len(lower); i++ {
		if !startsWord[uint16(lower[i])<<8|uint16(lower[i+1])] {
			continue
		}
		for _, w := range wordsByFirstByte[lower[i]] {
			k := &codeWords[w]
			if len(lower)-i < len(k.word) || lower[i+1] != k.word[1] || lower[i:i+len(k.word)] != k.word {
				continue
			}
			end := i + len(k.word)
			if k.bound&boundStart != 0 && letterBefore(lower, i) || k.bound == boundBoth && letterAfter(lower, end) {
				continue
			}
			for end < len(lower) && letterAfter(lower, end) {
				_, n := utf8.DecodeRuneInString(lower[end:])
				end += n
			}
			ms = append(ms, match{start: i, end: end, positive: k.positive, qualifies: k.qualifies, found: true})
		}
	}
	if len(ms) == 0 {
		return nil
	}
	out := make([]match, 0, len(ms))
	for _, m := range ms {
		if m.positive && insideNegative(ms, m) {
			continue
		}
		if m.positive && len(out) > 0 {
			if p := out[len(out)-1]; p.qualifies && p.start < m.start && strings.Trim(lower[min(p.end, m.start):m.start], " -") == "" {
				m.positive = false
			}
		}
		out = append(out, m)
	}
	return out
}

// insideNegative reports whether a negative match covers m.
func insideNegative(ms []match, m match) bool {
	for _, o := range ms {
		if !o.positive && o.start <= m.start && o.end >= m.end && o != m {
			return true
		}
	}
	return false
}

// lastMatch returns the last keyword of ms.
func lastMatch(ms []match) match {
	if len(ms) == 0 {
		return match{}
	}
	return ms[len(ms)-1]
}

func letterBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return i > 0 && unicode.IsLetter(r)
}

func letterAfter(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return i < len(s) && unicode.IsLetter(r)
}

// Classes of candidate codes.
const (
	classDigits = iota // 482913
	classUpper         // capitals and digits: 3GF7XQ, 3GF-XQ7
	classMixed         // lower-case letters and digits: x7k2m9pq, counted only beside a keyword
)

// candidate is a run of a line that could be a code: line[start:end] as shown,
// code as a person types it.
type candidate struct {
	start, end int
	code       string
	class      int
	year       bool // four digits from 1900 to 2099
}

// candidates returns the runs of line that have the shape of a code. Runs of
// ASCII letters and digits joined by one separator are read together, so that
// "12:30", "22.11.2026", "1,299.00" and "+1 555 010 0199" are seen whole and
// refused, not read as codes in pieces.
func candidates(line string) []candidate {
	var out []candidate
	for i := 0; i < len(line); {
		if !isAlnum(line[i]) {
			i++
			continue
		}
		start := i
		var runsBuf [4]string
		var sepsBuf [4]byte
		runs, seps := runsBuf[:0], sepsBuf[:0]
		for {
			j := i
			for j < len(line) && isAlnum(line[j]) {
				j++
			}
			runs = append(runs, line[i:j])
			i = j
			if j+1 < len(line) && isAlnum(line[j+1]) && joins(runs[len(runs)-1], line[j], line[j+1:]) {
				seps = append(seps, line[j])
				i = j + 1
				continue
			}
			break
		}
		if c, ok := readCandidate(runs, seps); ok && standsAlone(line, start, i) {
			c.start, c.end = start, i
			out = append(out, c)
		}
	}
	return out
}

// joins reports whether run and the run after sep (at the start of rest) are one
// token: digits with digits across any separator a number is written with, and
// capitals-and-digits groups across a hyphen.
func joins(run string, sep byte, rest string) bool {
	next := rest
	for k := 0; k < len(rest); k++ {
		if !isAlnum(rest[k]) {
			next = rest[:k]
			break
		}
	}
	switch {
	case allDigits(run) && allDigits(next):
		return strings.IndexByte(" -.,:/", sep) >= 0
	case sep == '-':
		return allUpperAlnum(run) && allUpperAlnum(next)
	}
	return false
}

// readCandidate reads runs joined by seps as a candidate code.
func readCandidate(runs []string, seps []byte) (candidate, bool) {
	if len(runs) == 1 {
		r := runs[0]
		switch {
		case allDigits(r):
			year := len(r) == 4 && (r[:2] == "19" || r[:2] == "20")
			return candidate{code: r, class: classDigits, year: year}, len(r) >= 4 && len(r) <= 10
		case !hasDigit(r) || len(r) < 4 || len(r) > 10:
			return candidate{}, false
		case allUpperAlnum(r):
			return candidate{code: r, class: classUpper}, true
		default:
			return candidate{code: r, class: classMixed}, len(r) >= 6 && interleaved(r)
		}
	}
	if allDigits(runs[0]) {
		// Two equal groups: "482 913", "4829-1350". Anything else made of
		// digits is a date, a time, a price or a phone number.
		ok := len(runs) == 2 && (seps[0] == ' ' || seps[0] == '-') && len(runs[0]) == len(runs[1]) &&
			(len(runs[0]) == 3 || len(runs[0]) == 4)
		return candidate{code: runs[0] + runs[1], class: classDigits}, ok
	}
	// Groups of capitals and digits across hyphens.
	if len(runs) == 2 && !hasDigit(runs[0]) && len(runs[0]) <= 3 && allDigits(runs[1]) {
		r := runs[1] // a sender's prefix: "G-482913"
		return candidate{code: r, class: classDigits}, len(r) >= 4 && len(r) <= 10
	}
	shown := strings.Join(runs, "-")
	n := len(shown) - len(runs) + 1
	return candidate{code: shown, class: classUpper}, hasDigit(shown) && n >= 4 && n <= 10
}

// standsAlone reports whether line[start:end] is a token of its own, not part of
// a price ("$4829", "4829 €"), a reference ("#1042", "No.1042"), a file name or
// domain ("4829.pdf"), an identifier ("user_4829", "ab-4829") or a percentage.
func standsAlone(line string, start, end int) bool {
	if start > 0 {
		r, n := utf8.DecodeLastRuneInString(line[:start])
		if strings.ContainsRune("#+$@/\\_&=%~^№", r) || unicode.Is(unicode.Sc, r) {
			return false
		}
		if strings.ContainsRune("-.", r) && start-n > 0 && isAlnum(line[start-n-1]) {
			return false
		}
	}
	if end < len(line) {
		r, n := utf8.DecodeRuneInString(line[end:])
		if strings.ContainsRune("@_%/\\", r) || unicode.Is(unicode.Sc, r) {
			return false
		}
		if strings.ContainsRune(".,-", r) && end+n < len(line) && isAlnum(line[end+n]) {
			return false
		}
	}
	return true
}

// interleaved reports whether letters and digits alternate at least twice, as
// in a generated code ("x7k2m9pq"), unlike a word with a number ("iphone15",
// "10min", "utf8").
func interleaved(s string) bool {
	changes := 0
	for i := 1; i < len(s); i++ {
		if isDigit(s[i]) != isDigit(s[i-1]) {
			changes++
		}
	}
	return changes >= 2
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func allUpperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return s != ""
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			return true
		}
	}
	return false
}

package inbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/store"
)

// Codecs of stored bytes (blobs.codec, raw_sources.codec, the first byte of
// emails.body): the small format marker that lets a reader tell compressed
// bytes from bytes stored as they are.
const (
	codecNone = 0 // stored as received
	codecZstd = 1 // one zstd frame
	codecS2   = 2 // one S2 block (github.com/klauspost/compress/s2)
	// codecInRaw is an emails.body of this one byte: the email's body is stored
	// after its raw source, in the same raw_sources content (see messageBytes).
	codecInRaw = 3
)

// bodyInRaw is the emails.body of an email whose body follows its raw source.
var bodyInRaw = []byte{codecInRaw}

// One zstd encoder per level and one decoder serve every goroutine: EncodeAll
// and DecodeAll are safe for concurrent use and reuse their internal state, so
// compressing a message costs no allocation of a new encoder.
//
// Content under smallContent goes through the fastest level, with a window no
// larger than itself: on a 1 KB message and its body it took two thirds of the
// default level's CPU time for 5 % more bytes (docs/benchmarks.md, "Footprint").
// Larger content keeps the default level, where the ratio is worth the time.
var (
	zstdEncoder      = mustEncoder(zstd.WithEncoderLevel(zstd.SpeedDefault))
	zstdSmallEncoder = mustEncoder(zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(smallContent))
	zstdDecoder      = mustDecoder()
)

// smallContent is the size under which content is compressed at zstd's
// fastest level.
const smallContent = 64 << 10

// s2Content is the size under which content is compressed with S2 rather than
// zstd. Compression runs on the senders' goroutines before the group commit,
// on the same cores as everything else: under a load of 1 KB messages, zstd
// (even at its fastest level) took about a sixth of the server's CPU time and
// cost small-message ingest a fifth of its rate; S2 costs a tenth of that, for
// about a quarter more bytes (a 1 KB message and its body: 803 bytes against
// 638), and the database still takes less per email than Mailpit's
// (docs/benchmarks.md, "Ingest after issue 20"). Above it zstd's entropy
// coding is worth its time: S2, which has none, left a 30 KiB attachment's
// base64 a third larger.
const s2Content = 16 << 10

func mustEncoder(opts ...zstd.EOption) *zstd.Encoder {
	e, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		panic(err)
	}
	return e
}

func mustDecoder() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
	if err != nil {
		panic(err)
	}
	return d
}

// packed is content ready to store: compressed when that makes it smaller. Data
// that is already compressed (a JPEG, a ZIP, a PDF's streams) does not shrink and
// is stored as it is, so reading it back costs nothing. Raw sources, bodies and
// blobs are all stored this way.
type packed struct {
	codec int
	size  int64  // content bytes
	data  []byte // as stored
}

// blob is an attachment's packed content named by its SHA-256, so the same
// bytes are stored once however many rows refer to them.
type blob struct {
	hash string // hex SHA-256 of the content
	packed
}

// contentHash names content: hex SHA-256.
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// emptyContentHash is the contentHash of no bytes.
var emptyContentHash = contentHash(nil)

// minCompress is the smallest content worth compressing: below it the
// formats' headers leave little saved. Compression runs on the senders'
// goroutines, not in the writer, whose pace sets ingest's.
const minCompress = 256

// pack prepares content for storage: with S2 under s2Content, zstd's fastest
// level under smallContent, zstd's default level from there. Content under
// minCompress, or that does not shrink, is stored as it is.
func pack(content []byte) packed {
	p := packed{codec: codecNone, size: int64(len(content)), data: nonNil(content)}
	switch {
	case len(content) < minCompress:
	case len(content) < s2Content:
		if z := s2.Encode(nil, content); len(z) < len(content) {
			p.codec, p.data = codecS2, z
		}
	default:
		enc := zstdEncoder
		if len(content) < smallContent {
			enc = zstdSmallEncoder
		}
		if z := enc.EncodeAll(content, make([]byte, 0, len(content)/2)); len(z) < len(content) {
			p.codec, p.data = codecZstd, z
		}
	}
	return p
}

// newHashedBlob packs content whose SHA-256 (contentHash) is hash.
func newHashedBlob(content []byte, hash string) *blob {
	return &blob{hash: hash, packed: pack(content)}
}

// decodeBlob returns the content of stored bytes.
func decodeBlob(codec int, data []byte) ([]byte, error) {
	switch codec {
	case codecNone:
		return data, nil
	case codecS2:
		out, err := s2.Decode(nil, data)
		if err != nil {
			return nil, fmt.Errorf("decompress stored bytes: %w", err)
		}
		return out, nil
	case codecZstd:
		out, err := zstdDecoder.DecodeAll(data, nil)
		if err != nil {
			return nil, fmt.Errorf("decompress stored bytes: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("stored bytes have unknown codec %d", codec)
}

// putBlobs stores blobs that are not stored yet, in hash order (so that two
// transactions taking the same blobs cannot deadlock), and makes sure each one
// still exists when the transaction commits. On PostgreSQL a blob that exists
// already is locked FOR KEY SHARE, so a concurrent deleteEmails, which locks the
// blobs it may delete FOR UPDATE, waits for this transaction and then sees its new
// reference; if that transaction deleted the blob first, it is inserted again.
func putBlobs(ctx context.Context, tx *store.Tx, blobs map[string]*blob) error {
	hashes := make([]string, 0, len(blobs))
	for h := range blobs {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	for _, h := range hashes {
		b := blobs[h]
		for attempt := 0; ; attempt++ {
			res, err := tx.Exec(ctx, "INSERT INTO blobs (hash, codec, size, data) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
				b.hash, b.codec, b.size, b.data)
			if err != nil {
				return fmt.Errorf("insert blob: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 1 || !tx.ConcurrentWriters() {
				break // SQLite has one writer: a blob that exists stays until we commit
			}
			var got string
			err = tx.QueryRow(ctx, "SELECT hash FROM blobs WHERE hash = ?"+tx.ForKeyShare(), b.hash).Scan(&got)
			if err == nil {
				break
			}
			if !errors.Is(err, sql.ErrNoRows) || attempt >= 3 {
				return fmt.Errorf("lock blob: %w", err)
			}
		}
	}
	return nil
}

// inChunk bounds the number of values bound in one IN (...) list.
const inChunk = 500

func eachChunk[T any](values []T, fn func([]any) error) error {
	for len(values) > 0 {
		n := min(len(values), inChunk)
		part := make([]any, n)
		for i, v := range values[:n] {
			part[i] = v
		}
		if err := fn(part); err != nil {
			return err
		}
		values = values[n:]
	}
	return nil
}

// A stored email is its Email document as JSON (emails.doc, readable with any
// SQL client) without the text and html bodies and the links and codes read
// from them, which go to emails.body: one codec byte, then {"text", "html",
// "links", "codes"} as JSON, zstd-compressed when that makes it smaller. Bodies
// are most of an email's size (an HTML newsletter's markup compresses five to
// ten times), and a search page decodes only twenty of them. Links repeat the
// bodies' URLs, so beside them they compress to almost nothing, where in the
// document each would add its whole length to the row.
// Rows stored before emails.body existed keep their bodies in doc.
type storedBody struct {
	Text  string   `json:"text,omitempty"`
	HTML  string   `json:"html,omitempty"`
	Links []Link   `json:"links"` // [] when none: a body without them is an older row's
	Codes []string `json:"codes"`
}

// packBody returns an email's bodies, links and codes (bodyJSON) as stored in
// emails.body: a codec byte, then the JSON, packed.
func packBody(js []byte) []byte {
	stored := pack(js)
	return append([]byte{byte(stored.codec)}, stored.data...)
}

// bodyJSON returns an email's bodies, links and codes as stored: as JSON,
// without a codec byte.
func bodyJSON(sb storedBody) ([]byte, error) {
	if sb.Links == nil {
		sb.Links = []Link{}
	}
	if sb.Codes == nil {
		sb.Codes = []string{}
	}
	// Without HTML escaping ("<" as \u003c), the JSON of an HTML mail is 11 to
	// 36 % smaller (the corpus's sign-in mails, a newsletter), and so is the
	// compressor's work, which pays for the links stored beside the bodies.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sb); err != nil {
		return nil, fmt.Errorf("encode email body: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// encodeDoc returns the stored document of e: the Email without its bodies,
// links and codes.
func encodeDoc(e Email) (string, error) {
	e.Text, e.HTML = "", ""
	d, err := json.Marshal(struct {
		Email
		Links []Link   `json:"links,omitempty"` // these shadow Email's, and stay empty
		Codes []string `json:"codes,omitempty"`
	}{Email: e})
	if err != nil {
		return "", fmt.Errorf("encode email: %w", err)
	}
	return string(d), nil
}

// emailCols are the columns of emails e (and raw_sources r, joined with
// rawJoin) that a storedEmail scans.
const (
	emailCols = "e.doc, e.body, r.codec, r.size, r.data"
	// rawJoin joins the raw source of an email whose body follows it
	// (emails.body is bodyInRaw, the only one-byte body) and no other.
	rawJoin = " LEFT JOIN raw_sources r ON r.id = e.raw_id AND length(e.body) = 1"
)

// storedEmail is an email as read with emailCols: its document, its body and,
// when the body follows the raw source, that source's content.
type storedEmail struct {
	doc      string
	body     []byte
	rawCodec sql.NullInt64
	rawSize  sql.NullInt64
	rawData  []byte
}

// dest are the scan destinations of emailCols.
func (s *storedEmail) dest() []any {
	return []any{&s.doc, &s.body, &s.rawCodec, &s.rawSize, &s.rawData}
}

// decode returns the Email.
func (s *storedEmail) decode() (Email, error) {
	if len(s.body) != 1 || s.body[0] != codecInRaw {
		return decodeEmail(s.doc, s.body)
	}
	if !s.rawCodec.Valid {
		return Email{}, errors.New("decode stored email: its body is in a raw source that is missing")
	}
	_, body, err := splitRaw(int(s.rawCodec.Int64), s.rawSize.Int64, s.rawData)
	if err != nil {
		return Email{}, fmt.Errorf("decode stored email: %w", err)
	}
	return decodeEmailJSON(s.doc, body)
}

// splitRaw decodes a raw_sources content stored with codec, whose raw source
// is its first size bytes, into the raw source and what follows it: a small
// message's body, or nothing.
func splitRaw(codec int, size int64, data []byte) (raw, after []byte, err error) {
	content, err := decodeBlob(codec, data)
	if err != nil {
		return nil, nil, err
	}
	if size < 0 || size > int64(len(content)) {
		return nil, nil, fmt.Errorf("raw source of %d bytes holds %d", size, len(content))
	}
	return content[:size:size], content[size:], nil
}

// decodeEmail reads a stored document and body back into an Email; a nil body
// is a row whose bodies are in doc. A row stored before links and codes were
// read at ingest (its body has neither) gets them now.
func decodeEmail(doc string, body []byte) (Email, error) {
	if len(body) == 0 {
		return decodeEmailJSON(doc, nil)
	}
	b, err := decodeBlob(int(body[0]), body[1:])
	if err != nil {
		return Email{}, fmt.Errorf("decode stored email body: %w", err)
	}
	return decodeEmailJSON(doc, b)
}

// decodeEmailJSON reads a stored document and its body's JSON (bodyJSON; nil
// when the bodies are in doc) back into an Email.
func decodeEmailJSON(doc string, b []byte) (Email, error) {
	e, err := decodeStored(doc, b)
	if err == nil && (e.Links == nil || e.Codes == nil) {
		e.Links, e.Codes = message.Extract(e.Subject, e.Text, e.HTML)
	}
	return e, err
}

func decodeStored(doc string, b []byte) (Email, error) {
	var e Email
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return Email{}, fmt.Errorf("decode stored email: %w", err)
	}
	if b == nil {
		return e, nil
	}
	var sb storedBody
	if err := json.Unmarshal(b, &sb); err != nil {
		return Email{}, fmt.Errorf("decode stored email body: %w", err)
	}
	e.Text, e.HTML, e.Links, e.Codes = sb.Text, sb.HTML, sb.Links, sb.Codes
	return e, nil
}

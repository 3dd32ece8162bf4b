package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/store"
)

// Query is a parsed inbox search (the seed's GET /api/emails/{namespace}/inbox).
type Query struct {
	NamespaceID      string
	Limit, Offset    int
	FromTimestamp    *int64 // Unix milliseconds, inclusive
	ToTimestamp      *int64 // Unix milliseconds, inclusive
	ToAddrPrefix     string // case-insensitive prefix of any To/Cc/envelope recipient
	FromAddrIncludes string // case-insensitive substring of the From address
	SubjectIncludes  string // case-insensitive substring of the subject
}

// Result is one page of a search and the count of every match.
type Result struct {
	Total  int
	Emails []Email
}

// Limits on search parameters (the seed's, and ours for the strings).
const (
	DefaultLimit   = 10
	MaxLimit       = 20
	MaxFilterRunes = 998
)

// minTrigram is the shortest substring the trigram indexes can serve; shorter
// ones are matched by scanning the namespace's rows.
const minTrigram = 3

// Searcher runs inbox searches.
type Searcher struct {
	db  *store.DB
	now func() time.Time
	// scanLimit is the namespace size up to which a substring filter is
	// matched row by row rather than through the trigram index (SQLite).
	scanLimit int64

	// phrases remembers needsPhrase's recent answers, by column and value, so
	// that a search repeated while it waits for its email does not sample the
	// index each time. The answer only chooses a plan: a stale one costs time,
	// never a wrong result.
	phrasesMu sync.Mutex
	phrases   map[string]phraseChoice

	// cols holds namespaces' searched columns in memory (SQLite), nil when
	// disabled (see columns.go).
	cols *columnCache
}

// phraseChoice is one needsPhrase answer and when it was sampled.
type phraseChoice struct {
	need bool
	at   time.Time
}

// How long and how many needsPhrase answers are kept.
const (
	phraseTTL     = 30 * time.Second
	maxPhraseKeys = 1024
)

// NewSearcher returns a searcher over db.
func NewSearcher(db *store.DB) *Searcher {
	return &Searcher{db: db, now: time.Now, scanLimit: driveThreshold, cols: newColumnCache(defaultColumnBudget)}
}

// SetColumnBudget sets the memory, in bytes, that substring searches on SQLite
// may keep namespaces' columns in (columns.go); 0 turns the copies off, and
// every search then runs in SQLite.
func (s *Searcher) SetColumnBudget(bytes int64) {
	s.cols = nil
	if bytes > 0 {
		s.cols = newColumnCache(bytes)
	}
}

// SetClock replaces the clock (tests).
func (s *Searcher) SetClock(now func() time.Time) { s.now = now }

// ftsPhrase quotes s as an FTS5 phrase (double quotes doubled).
func ftsPhrase(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// where builds the shared WHERE clause of the page and count queries.
//
// With p.drive set (SQLite only), the namespace and expiry terms are written so
// that SQLite cannot use an index for them (a unary +): the plan then starts from
// the filter's subquery and fetches the few matching rows by seq, instead of
// walking every index entry of the namespace and probing the subquery for each.
// With p.scan set, substring filters are checked on each row of the namespace.
func (s *Searcher) where(q Query, p searchPlan) (string, []any) {
	drive := p.drive
	now := s.now().UnixMilli()
	conds := []string{"e.namespace_id = ?", "e.expires_ms > ?"}
	switch {
	case drive:
		conds = []string{"+e.namespace_id = ?", "+e.expires_ms > ?"}
	case s.db.Dialect == store.SQLite:
		// The expiry is checked on emails_ns_time's entries, never sought through
		// emails_expiry: that index would return rows unordered and SQLite would
		// sort the whole namespace for one page.
		conds = []string{"e.namespace_id = ?", "+e.expires_ms > ?"}
	}
	args := []any{q.NamespaceID, now}
	if q.FromTimestamp != nil {
		conds = append(conds, "e.received_ms >= ?")
		args = append(args, *q.FromTimestamp)
	}
	if q.ToTimestamp != nil {
		conds = append(conds, "e.received_ms <= ?")
		args = append(args, *q.ToTimestamp)
	}
	if q.ToAddrPrefix != "" {
		// Driven from the recipients' primary key (namespace_id, addr, email_seq):
		// a range scan over the matching addresses only.
		p := strings.ToLower(q.ToAddrPrefix)
		if hi, ok := store.PrefixUpperBound(p); ok {
			conds = append(conds, "e.seq IN (SELECT r.email_seq FROM email_recipients r WHERE r.namespace_id = ? AND r.addr >= ? AND r.addr < ?)")
			args = append(args, q.NamespaceID, p, hi)
		} else {
			conds = append(conds, "e.seq IN (SELECT r.email_seq FROM email_recipients r WHERE r.namespace_id = ? AND r.addr >= ?)")
			args = append(args, q.NamespaceID, p)
		}
	}
	if q.SubjectIncludes != "" {
		c, a := s.substring("subject", q.SubjectIncludes, p)
		conds = append(conds, c)
		args = append(args, a...)
	}
	if q.FromAddrIncludes != "" {
		c, a := s.substring("from_addr", q.FromAddrIncludes, p)
		conds = append(conds, c)
		args = append(args, a...)
	}
	return strings.Join(conds, " AND "), args
}

// substring matches column against a case-insensitive substring through the
// trigram index of the store (FTS5 on SQLite, pg_trgm on PostgreSQL), or on
// SQLite with scan set, row by row.
func (s *Searcher) substring(column, needle string, p searchPlan) (string, []any) {
	lower := store.Fold(needle)
	if s.db.Dialect == store.Postgres {
		like := "%" + store.EscapeLike(lower) + "%"
		if column == "subject" {
			return `lower(e.subject) LIKE ? ESCAPE '\'`, []any{like}
		}
		return `e.from_addr LIKE ? ESCAPE '\'`, []any{like}
	}
	query, ok := ftsQuery(lower, p.phrase[column])
	if p.scan || !ok {
		// Row by row, with the folding the index's candidates are checked
		// with below.
		return "instr(fold(e." + column + "), ?) > 0", []any{lower}
	}
	// The index proposes candidates (ftsQuery) and each is checked for the whole
	// substring on its row, with the folding the trigram tokenizer applies. The
	// newest emails, not yet in the index (at most searchIndexLag of them), are
	// all candidates.
	return "e.seq IN (SELECT rowid FROM emails_fts WHERE emails_fts MATCH ?" +
			" UNION ALL SELECT seq FROM emails WHERE seq > (SELECT indexed_seq FROM search_index_state WHERE id = 1))" +
			" AND instr(fold(e." + column + "), ?) > 0",
		[]any{column + ": (" + query + ")", lower}
}

// ftsQuery returns the FTS5 query whose matches include every row containing
// needle: the needle's words of at least three characters, each as a phrase,
// joined by AND, and with phrase set the whole needle as a phrase after them;
// the whole needle alone when it is one word or no word is that long. ok is
// false when the index cannot serve the needle: under three characters, or a
// NUL with no long word beside it (FTS5 reads its query up to the first NUL).
//
// FTS5 reads a phrase's trigrams in step, so the whole needle alone, with one
// word that every subject holds ("Order"), reads that word's whole posting
// list: 3.8 ms for one match among 100,000 subjects that all hold "for user",
// against 0.23 ms for the words, where the rarest leads the AND. The row check
// in substring makes the answer exact. The phrase after the words pays only
// where the words are common and the needle is not (see needsPhrase).
func ftsQuery(needle string, phrase bool) (query string, ok bool) {
	words := ftsWords(needle)
	switch {
	case len(words) > 0 && phrase && !singleWord(needle, words):
		return strings.Join(words, " AND ") + " AND " + ftsPhrase(needle), true
	case len(words) > 0:
		return strings.Join(words, " AND "), true
	case utf8.RuneCountInString(needle) < minTrigram || strings.ContainsRune(needle, 0):
		return "", false
	}
	return ftsPhrase(needle), true
}

// ftsWords returns needle's words of at least three characters as FTS5 phrases.
func ftsWords(needle string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(needle, func(r rune) bool { return r == 0 || unicode.IsSpace(r) }) {
		if utf8.RuneCountInString(w) >= minTrigram {
			words = append(words, ftsPhrase(w))
		}
	}
	return words
}

// singleWord reports whether needle is its one word, so that the phrase adds
// nothing to it (or, holding a NUL, cannot be written at all).
func singleWord(needle string, words []string) bool {
	return strings.ContainsRune(needle, 0) || (len(words) == 1 && words[0] == ftsPhrase(needle))
}

// phraseSample is how many of the index's candidates for a value's words
// needsPhrase checks.
const phraseSample = 200

// needsPhrase reports whether a value's FTS5 query should hold the whole value
// after its words: when the words alone find at least phraseSample rows (in
// any namespace) and fewer than half of those hold the value. Then the words
// are common and the value is not ("user for" among subjects that all say
// "for user"), and the phrase keeps FTS5 from proposing every row to the row
// check: 16 ms instead of 100 ms over 100,000 such subjects. Where the words
// are rare, or most rows holding them hold the value too, the phrase would
// only cost (12.5 % of 100,000 subjects: 36 ms with it, 31 ms without).
func (s *Searcher) needsPhrase(ctx context.Context, column, needle string) (bool, error) {
	lower := store.Fold(needle)
	words := ftsWords(lower)
	if len(words) == 0 || singleWord(lower, words) {
		return false, nil
	}
	key := column + "\x00" + lower
	now := s.now()
	s.phrasesMu.Lock()
	c, ok := s.phrases[key]
	s.phrasesMu.Unlock()
	if ok && now.Sub(c.at) < phraseTTL {
		return c.need, nil
	}
	var n, hits int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*), COALESCE(SUM(instr(fold(e.`+column+`), ?) > 0), 0)
		FROM (SELECT rowid FROM emails_fts WHERE emails_fts MATCH ? LIMIT ?) c CROSS JOIN emails e ON e.seq = c.rowid`,
		lower, column+": ("+strings.Join(words, " AND ")+")", phraseSample).Scan(&n, &hits)
	if err != nil {
		return false, fmt.Errorf("sample the search index: %w", err)
	}
	need := n >= phraseSample && 2*hits < n
	s.phrasesMu.Lock()
	if len(s.phrases) >= maxPhraseKeys || s.phrases == nil {
		s.phrases = map[string]phraseChoice{}
	}
	s.phrases[key] = phraseChoice{need, now}
	s.phrasesMu.Unlock()
	return need, nil
}

// unfiltered reports whether q selects the whole namespace.
func unfiltered(q Query) bool {
	return q.FromTimestamp == nil && q.ToTimestamp == nil && q.ToAddrPrefix == "" &&
		q.FromAddrIncludes == "" && q.SubjectIncludes == ""
}

// driveThreshold is the namespace size above which a substring search on SQLite
// starts from the trigram index rather than from the namespace's rows.
const driveThreshold = 5000

// searchPlan is how a SQLite search finds its rows (see where).
type searchPlan struct {
	drive  bool            // start from the filters' subqueries, not the namespace's rows
	scan   bool            // check substring filters row by row, without the trigram index
	phrase map[string]bool // by column: the FTS5 query holds the whole value (needsPhrase)
}

// plan decides, on SQLite, how the search finds its rows. A to_addr_prefix
// subquery is bounded by the namespace, so it always leads. The trigram index
// spans every namespace: in a namespace large enough that walking its rows
// costs more than the index's candidates, the substring subquery leads; in a
// smaller one the index is not used at all, since SQLite would gather every
// match of every namespace to probe it (half a second for a common phrase over
// a million emails), while checking each of the namespace's rows takes about a
// microsecond.
func (s *Searcher) plan(ctx context.Context, q Query) (searchPlan, error) {
	if s.db.Dialect != store.SQLite {
		return searchPlan{}, nil // PostgreSQL plans from its statistics
	}
	p := searchPlan{drive: q.ToAddrPrefix != ""}
	long := func(f string) bool { _, ok := ftsQuery(store.Fold(f), false); return ok } // the index can serve it
	if !long(q.SubjectIncludes) && !long(q.FromAddrIncludes) {
		return p, nil
	}
	var n int64
	if err := s.db.QueryRow(ctx, "SELECT COALESCE(SUM(emails), 0) FROM namespace_counts WHERE namespace_id = ?", q.NamespaceID).Scan(&n); err != nil {
		return p, fmt.Errorf("size of namespace: %w", err)
	}
	if n <= s.scanLimit {
		p.scan = true
		return p, nil
	}
	p.drive = true
	p.phrase = map[string]bool{}
	for column, value := range map[string]string{"subject": q.SubjectIncludes, "from_addr": q.FromAddrIncludes} {
		if !long(value) {
			continue
		}
		need, err := s.needsPhrase(ctx, column, value)
		if err != nil {
			return p, err
		}
		p.phrase[column] = need
	}
	return p, nil
}

// searchIndexLag is how many emails the SQLite FTS5 index may lag behind the
// newest. Adding emails to FTS5 writes a new index segment and now and then
// merges segments, a cost per statement rather than per email; done once per
// searchIndexLag emails it is a small share of ingest, and a substring search
// reads at most that many emails past the index one by one (Searcher.substring).
const searchIndexLag = 256

// catchUpIndex adds the emails up to seq last to the SQLite FTS5 index once the
// index lags by searchIndexLag emails, or whenever force is set. It runs in the
// writer's transaction, so the index and search_index_state move together.
// PostgreSQL's trigram indexes update with each row and need nothing.
func catchUpIndex(ctx context.Context, tx *store.Tx, last int64, force bool) error {
	if tx.Dialect() != store.SQLite || last < 0 {
		return nil
	}
	var indexed int64
	if err := tx.QueryRow(ctx, "SELECT indexed_seq FROM search_index_state WHERE id = 1").Scan(&indexed); err != nil {
		return fmt.Errorf("read search index position: %w", err)
	}
	if last <= indexed || (!force && last-indexed < searchIndexLag) {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO emails_fts (rowid, subject, from_addr)
		SELECT seq, subject, from_addr FROM emails WHERE seq > ? AND seq <= ?`, indexed, last); err != nil {
		return fmt.Errorf("index emails for search: %w", err)
	}
	if _, err := tx.Exec(ctx, "UPDATE search_index_state SET indexed_seq = ? WHERE id = 1", last); err != nil {
		return fmt.Errorf("record search index position: %w", err)
	}
	return nil
}

// Search returns one page of matching emails, newest first, and the total count.
// Expired emails are never returned, even before the reaper deletes them.
func (s *Searcher) Search(ctx context.Context, q Query) (Result, error) {
	if s.columnSearchable(q) {
		res, ok, err := s.searchColumns(ctx, q)
		if ok || err != nil {
			return res, err
		}
	}
	p, err := s.plan(ctx, q)
	if err != nil {
		return Result{}, err
	}
	where, args := s.where(q, p)
	if !unfiltered(q) {
		return s.searchFiltered(ctx, q, where, args)
	}
	// Counted from namespace_counts rather than row by row: constant time however
	// large the namespace. Emails past their expiry that the reaper has not
	// deleted yet are taken off; the reaper's emails_expiry index holds them at
	// its start, so they are found without a walk of the namespace.
	var res Result
	err = s.db.QueryRow(ctx, "SELECT "+liveCount(s.db.Dialect), q.NamespaceID, s.now().UnixMilli(), q.NamespaceID).Scan(&res.Total)
	if err != nil {
		return Result{}, fmt.Errorf("count emails: %w", err)
	}
	res.Emails = make([]Email, 0, q.Limit)
	if res.Total == 0 || q.Offset >= res.Total {
		return res, nil
	}
	pageArgs := append(append([]any{}, args...), q.Limit, q.Offset)
	rows, err := s.db.Query(ctx, "SELECT e.doc, e.body FROM emails e WHERE "+where+
		" ORDER BY e.received_ms DESC, e.seq DESC LIMIT ? OFFSET ?", pageArgs...)
	if err != nil {
		return Result{}, fmt.Errorf("search emails: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanDoc(rows)
		if err != nil {
			return Result{}, err
		}
		res.Emails = append(res.Emails, e)
	}
	return res, rows.Err()
}

// liveCount is the SQL expression for a namespace's unexpired emails, with the
// arguments namespace, now (ms), namespace: namespace_counts less the expired
// emails the reaper has not deleted yet.
func liveCount(d store.Dialect) string {
	nsTerm := "namespace_id = ?"
	if d == store.SQLite {
		nsTerm = "+namespace_id = ?" // seek the expiry index, never walk the namespace
	}
	return `(SELECT COALESCE(SUM(emails), 0) FROM namespace_counts WHERE namespace_id = ?)
		- (SELECT COUNT(*) FROM emails WHERE expires_ms <= ? AND ` + nsTerm + `)`
}

// searchFiltered finds a filtered search's matches once: their keys are
// gathered (m), counted, and the page's keys picked from them (p); only the
// page's rows are read whole. One row comes back even when the page is empty,
// carrying the count with a NULL document.
func (s *Searcher) searchFiltered(ctx context.Context, q Query, where string, args []any) (Result, error) {
	args = append(append([]any{}, args...), q.Limit, q.Offset)
	rows, err := s.db.Query(ctx, `WITH m AS MATERIALIZED (SELECT e.seq, e.received_ms FROM emails e WHERE `+where+`),
		p AS (SELECT seq, received_ms FROM m ORDER BY received_ms DESC, seq DESC LIMIT ? OFFSET ?)
		SELECT (SELECT COUNT(*) FROM m), e.doc, e.body
		FROM (SELECT 1 AS one) o LEFT JOIN p ON o.one = 1 LEFT JOIN emails e ON e.seq = p.seq
		ORDER BY p.received_ms DESC, p.seq DESC`, args...)
	if err != nil {
		return Result{}, fmt.Errorf("search emails: %w", err)
	}
	defer rows.Close()
	res := Result{Emails: make([]Email, 0, q.Limit)}
	for rows.Next() {
		var doc sql.NullString
		var body []byte
		if err := rows.Scan(&res.Total, &doc, &body); err != nil {
			return Result{}, fmt.Errorf("search emails: %w", err)
		}
		if !doc.Valid {
			continue // the page is empty
		}
		e, err := decodeEmail(doc.String, body)
		if err != nil {
			return Result{}, err
		}
		res.Emails = append(res.Emails, e)
	}
	return res, rows.Err()
}

func scanDoc(row interface{ Scan(...any) error }) (Email, error) {
	var doc string
	var body []byte
	if err := row.Scan(&doc, &body); err != nil {
		return Email{}, err
	}
	return decodeEmail(doc, body)
}

// Latest returns the newest unexpired email of the namespace.
func (s *Searcher) Latest(ctx context.Context, namespaceID string) (Email, error) {
	e, err := scanDoc(s.db.QueryRow(ctx, `SELECT e.doc, e.body FROM emails e WHERE e.namespace_id = ? AND e.expires_ms > ?
		ORDER BY e.received_ms DESC, e.seq DESC LIMIT 1`, namespaceID, s.now().UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return Email{}, store.ErrNotFound
	}
	return e, err
}

// StoredEmail is an email with the columns access checks need.
type StoredEmail struct {
	Email
	NamespaceID string
	ExpiresMs   int64
}

// ByID returns an unexpired email by id.
func (s *Searcher) ByID(ctx context.Context, id string) (StoredEmail, error) {
	var se StoredEmail
	var doc string
	var body []byte
	err := s.db.QueryRow(ctx, "SELECT namespace_id, expires_ms, doc, body FROM emails WHERE id = ? AND expires_ms > ?",
		id, s.now().UnixMilli()).Scan(&se.NamespaceID, &se.ExpiresMs, &doc, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredEmail{}, store.ErrNotFound
	}
	if err != nil {
		return StoredEmail{}, fmt.Errorf("get email: %w", err)
	}
	if se.Email, err = decodeEmail(doc, body); err != nil {
		return StoredEmail{}, err
	}
	return se, nil
}

// StoredAttachment is an attachment's metadata with its email's access columns.
type StoredAttachment struct {
	ID, EmailID, Filename, ContentType, ContentID string
	Size                                          int64
	NamespaceID                                   string
	ExpiresMs                                     int64
}

const attachmentCols = `a.id, a.email_id, a.filename, a.content_type, a.content_id, a.size, e.namespace_id, e.expires_ms
	FROM attachments a JOIN emails e ON e.id = a.email_id`

func scanAttachment(row interface{ Scan(...any) error }) (StoredAttachment, error) {
	var a StoredAttachment
	err := row.Scan(&a.ID, &a.EmailID, &a.Filename, &a.ContentType, &a.ContentID, &a.Size, &a.NamespaceID, &a.ExpiresMs)
	return a, err
}

// Attachments lists an email's attachments in message order.
func (s *Searcher) Attachments(ctx context.Context, emailID string) ([]StoredAttachment, error) {
	rows, err := s.db.Query(ctx, "SELECT "+attachmentCols+" WHERE a.email_id = ? AND e.expires_ms > ? ORDER BY a.position",
		emailID, s.now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("list attachments: %w", err)
	}
	defer rows.Close()
	var out []StoredAttachment
	for rows.Next() {
		a, err := scanAttachment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Attachment returns one attachment's metadata, if its email has not expired.
func (s *Searcher) Attachment(ctx context.Context, id string) (StoredAttachment, error) {
	a, err := scanAttachment(s.db.QueryRow(ctx, "SELECT "+attachmentCols+" WHERE a.id = ? AND e.expires_ms > ?", id, s.now().UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return StoredAttachment{}, store.ErrNotFound
	}
	if err != nil {
		return StoredAttachment{}, fmt.Errorf("get attachment: %w", err)
	}
	return a, nil
}

// AttachmentData returns an attachment's bytes: from its own blob, from its
// email's raw source (which holds them already when the namespace keeps raw
// email), or, for rows stored before blobs existed, from the row itself.
func (s *Searcher) AttachmentData(ctx context.Context, id string) ([]byte, error) {
	var (
		data, blobData []byte
		emailID, sha   string
		position       int
		inRaw          bool
		codec          sql.NullInt64
	)
	err := s.db.QueryRow(ctx, `SELECT a.email_id, a.position, a.data, a.sha256, a.in_raw, b.codec, b.data
		FROM attachments a LEFT JOIN blobs b ON b.hash = a.blob_hash WHERE a.id = ?`, id).
		Scan(&emailID, &position, &data, &sha, &inRaw, &codec, &blobData)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get attachment bytes: %w", err)
	}
	switch {
	case codec.Valid:
		return decodeBlob(int(codec.Int64), blobData)
	case inRaw:
		raw, err := s.RawMessage(ctx, emailID)
		if err != nil {
			return nil, fmt.Errorf("attachment %s: raw source: %w", id, err)
		}
		return attachmentFromRaw(raw, position, sha)
	}
	return data, nil
}

// attachmentFromRaw parses the raw source again and returns the attachment at
// position, checked against the SHA-256 taken at ingest. Should a later version of
// the parser order or classify parts differently, the attachment is found by its
// hash among all of them. An attachment stored empty needs no parse: the parser
// used before mime.go stored some parts empty (base64 it could not decode) that
// are now decoded.
func attachmentFromRaw(raw []byte, position int, sha string) ([]byte, error) {
	if sha == emptyContentHash {
		return []byte{}, nil
	}
	atts := parseMessage(raw).Attachments
	if position < len(atts) && contentHash(atts[position].Data) == sha {
		return atts[position].Data, nil
	}
	for _, a := range atts {
		if contentHash(a.Data) == sha {
			return a.Data, nil
		}
	}
	return nil, fmt.Errorf("attachment %d not found in the raw source (sha256 %s)", position, sha)
}

// ErrRawNotCaptured is returned by RawMessage for an email whose namespace did not
// capture raw email when it arrived (capture_raw_email false).
var ErrRawNotCaptured = errors.New("raw source not captured")

// RawMessage returns the exact bytes received for an email, or ErrRawNotCaptured.
// It does not check the email's expiry or who may read it: callers look the email
// up first (ByID).
func (s *Searcher) RawMessage(ctx context.Context, emailID string) ([]byte, error) {
	var data []byte
	var codec int
	err := s.db.QueryRow(ctx, `SELECT r.codec, r.data FROM emails e JOIN raw_sources r ON r.id = e.raw_id
		WHERE e.id = ?`, emailID).Scan(&codec, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrRawNotCaptured
	}
	if err != nil {
		return nil, fmt.Errorf("get raw message: %w", err)
	}
	return decodeBlob(codec, data)
}

// RawSize returns the size in bytes of the email's raw source, or
// ErrRawNotCaptured.
func (s *Searcher) RawSize(ctx context.Context, emailID string) (int64, error) {
	var size int64
	err := s.db.QueryRow(ctx, "SELECT size FROM emails WHERE id = ? AND raw_id IS NOT NULL", emailID).Scan(&size)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrRawNotCaptured
	}
	if err != nil {
		return 0, fmt.Errorf("look up raw message: %w", err)
	}
	return size, nil
}

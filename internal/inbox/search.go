package inbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/inbox/index"
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

// DefaultColumnBudget is the memory the copies of substring searches may take
// unless configured (index.DefaultBudget).
const DefaultColumnBudget = index.DefaultBudget

// Searcher runs inbox searches.
type Searcher struct {
	db  *store.DB
	now func() time.Time

	// copies holds namespaces' searched columns in memory (SQLite), nil
	// when disabled (package index).
	copies *index.Cache
}

// NewSearcher returns a searcher over db.
//
// columnBudget is the memory, in bytes, that substring searches on SQLite may
// keep namespaces' columns in (DefaultColumnBudget; 0 for none, see
// SetColumnBudget).
func NewSearcher(db *store.DB, columnBudget int64) *Searcher {
	s := &Searcher{db: db, now: time.Now}
	s.SetColumnBudget(columnBudget)
	return s
}

// SetColumnBudget sets the memory, in bytes, that substring searches on SQLite
// may keep namespaces' columns in (package index); 0 turns the copies off, and
// every substring search then checks the namespace's rows one by one in SQLite.
func (s *Searcher) SetColumnBudget(bytes int64) {
	s.copies = nil
	if bytes > 0 {
		s.copies = index.New(bytes, liveCount(s.db))
	}
}

// ColumnBudget is the memory the copies of substring searches may hold, 0
// when there are none.
func (s *Searcher) ColumnBudget() int64 {
	if s.copies == nil {
		return 0
	}
	return s.copies.Budget()
}

// SetClock replaces the clock (tests).
func (s *Searcher) SetClock(now func() time.Time) { s.now = now }

// where builds the shared WHERE clause of the page and count queries.
//
// With p.drive set, the namespace and expiry terms are written so that SQLite
// cannot use an index for them (store.Unindexed): the plan then starts from
// the to_addr_prefix subquery and fetches the few matching rows by seq, instead
// of walking every index entry of the namespace and probing the subquery for
// each.
func (s *Searcher) where(q Query, p searchPlan) (string, []any) {
	now := s.now().UnixMilli()
	// The expiry is checked on emails_ns_time's entries, never sought through
	// emails_expiry: that index would return rows unordered and SQLite would
	// sort the whole namespace for one page.
	conds := []string{"e.namespace_id = ?", s.db.Unindexed("e.expires_ms") + " > ?"}
	if p.drive {
		conds[0] = s.db.Unindexed("e.namespace_id") + " = ?"
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
		c, a := recipientRange(q)
		conds = append(conds, "e.seq IN (SELECT r.email_seq FROM email_recipients r WHERE "+c+")")
		args = append(args, a...)
	}
	if q.SubjectIncludes != "" {
		c, a := s.substring("subject", q.SubjectIncludes)
		conds = append(conds, c)
		args = append(args, a...)
	}
	if q.FromAddrIncludes != "" {
		c, a := s.substring("from_addr", q.FromAddrIncludes)
		conds = append(conds, c)
		args = append(args, a...)
	}
	return strings.Join(conds, " AND "), args
}

// recipientRange is the condition on email_recipients r for q's
// to_addr_prefix: a range scan of the recipients' primary key (namespace_id,
// addr, email_seq) over the matching addresses only.
func recipientRange(q Query) (string, []any) {
	p := strings.ToLower(q.ToAddrPrefix)
	if hi, ok := store.PrefixUpperBound(p); ok {
		return "r.namespace_id = ? AND r.addr >= ? AND r.addr < ?", []any{q.NamespaceID, p, hi}
	}
	return "r.namespace_id = ? AND r.addr >= ?", []any{q.NamespaceID, p}
}

// substring matches column against a case-insensitive substring: through
// pg_trgm's trigram index on PostgreSQL, and on SQLite, which answers most
// substring searches from the namespace's copy in memory (package index), row by
// row, with the copy's folding.
func (s *Searcher) substring(column, needle string) (string, []any) {
	indexed := "e." + column // from_addr is stored in lower case
	if column == "subject" {
		indexed = "lower(e.subject)"
	}
	return s.db.Contains("e."+column, indexed, needle)
}

// unfiltered reports whether q selects the whole namespace.
func unfiltered(q Query) bool {
	return q.FromTimestamp == nil && q.ToTimestamp == nil && q.ToAddrPrefix == "" &&
		q.FromAddrIncludes == "" && q.SubjectIncludes == ""
}

// searchPlan is how a SQLite search finds its rows (see where).
type searchPlan struct {
	drive bool // start from the to_addr_prefix subquery, not the namespace's rows
}

// plan decides how the search finds its rows: a to_addr_prefix subquery is
// bounded by the namespace, so it always leads. SQLite has no statistics for
// these shapes and is told (store.Unindexed); PostgreSQL plans from its own.
func (s *Searcher) plan(q Query) searchPlan {
	return searchPlan{drive: q.ToAddrPrefix != ""}
}

// Search returns one page of matching emails, newest first, and the total count.
// Expired emails are never returned, even before the reaper deletes them.
func (s *Searcher) Search(ctx context.Context, q Query) (Result, error) {
	if s.copySearchable(q) {
		res, ok, err := s.searchCopy(ctx, q)
		if ok || err != nil {
			return res, err
		}
	}
	where, args := s.where(q, s.plan(q))
	if !unfiltered(q) {
		return s.searchFiltered(ctx, q, where, args)
	}
	// Counted from namespace_counts rather than row by row: constant time however
	// large the namespace. Emails past their expiry that the reaper has not
	// deleted yet are taken off; the reaper's emails_expiry index holds them at
	// its start, so they are found without a walk of the namespace.
	var res Result
	err := s.db.QueryRow(ctx, "SELECT "+liveCount(s.db), q.NamespaceID, s.now().UnixMilli(), q.NamespaceID).Scan(&res.Total)
	if err != nil {
		return Result{}, fmt.Errorf("count emails: %w", err)
	}
	res.Emails = make([]Email, 0, q.Limit)
	if res.Total == 0 || q.Offset >= res.Total {
		return res, nil
	}
	pageArgs := append(append([]any{}, args...), q.Limit, q.Offset)
	rows, err := s.db.Query(ctx, "SELECT "+emailCols+" FROM emails e"+rawJoin+" WHERE "+where+
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
// The namespace term is unindexed: SQLite seeks the expiry index and never
// walks the namespace.
func liveCount(db interface{ Unindexed(string) string }) string {
	return `(SELECT COALESCE(SUM(emails), 0) FROM namespace_counts WHERE namespace_id = ?)
		- (SELECT COUNT(*) FROM emails WHERE expires_ms <= ? AND ` + db.Unindexed("namespace_id") + ` = ?)`
}

// searchFiltered finds a filtered search's matches once: their keys are
// gathered (m), counted, and the page's keys picked from them (p); only the
// page's rows are read whole. One row comes back even when the page is empty,
// carrying the count with a NULL document.
func (s *Searcher) searchFiltered(ctx context.Context, q Query, where string, args []any) (Result, error) {
	args = append(append([]any{}, args...), q.Limit, q.Offset)
	rows, err := s.db.Query(ctx, `WITH m AS MATERIALIZED (SELECT e.seq, e.received_ms FROM emails e WHERE `+where+`),
		p AS (SELECT seq, received_ms FROM m ORDER BY received_ms DESC, seq DESC LIMIT ? OFFSET ?)
		SELECT (SELECT COUNT(*) FROM m), `+emailCols+`
		FROM (SELECT 1 AS one) o LEFT JOIN p ON o.one = 1 LEFT JOIN emails e ON e.seq = p.seq`+rawJoin+`
		ORDER BY p.received_ms DESC, p.seq DESC`, args...)
	if err != nil {
		return Result{}, fmt.Errorf("search emails: %w", err)
	}
	defer rows.Close()
	res := Result{Emails: make([]Email, 0, q.Limit)}
	for rows.Next() {
		var doc sql.NullString
		var se storedEmail
		if err := rows.Scan(append([]any{&res.Total, &doc}, se.dest()[1:]...)...); err != nil {
			return Result{}, fmt.Errorf("search emails: %w", err)
		}
		if !doc.Valid {
			continue // the page is empty
		}
		se.doc = doc.String
		e, err := se.decode()
		if err != nil {
			return Result{}, err
		}
		res.Emails = append(res.Emails, e)
	}
	return res, rows.Err()
}

// scanDoc reads an email selected with emailCols.
func scanDoc(row interface{ Scan(...any) error }) (Email, error) {
	var se storedEmail
	if err := row.Scan(se.dest()...); err != nil {
		return Email{}, err
	}
	return se.decode()
}

// Latest returns the newest unexpired email of the namespace.
func (s *Searcher) Latest(ctx context.Context, namespaceID string) (Email, error) {
	e, err := scanDoc(s.db.QueryRow(ctx, `SELECT `+emailCols+` FROM emails e`+rawJoin+` WHERE e.namespace_id = ? AND e.expires_ms > ?
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
	var st storedEmail
	err := s.db.QueryRow(ctx, "SELECT e.namespace_id, e.expires_ms, "+emailCols+" FROM emails e"+rawJoin+" WHERE e.id = ? AND e.expires_ms > ?",
		id, s.now().UnixMilli()).Scan(append([]any{&se.NamespaceID, &se.ExpiresMs}, st.dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredEmail{}, store.ErrNotFound
	}
	if err != nil {
		return StoredEmail{}, fmt.Errorf("get email: %w", err)
	}
	if se.Email, err = st.decode(); err != nil {
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
	var size int64
	err := s.db.QueryRow(ctx, `SELECT r.codec, r.size, r.data FROM emails e JOIN raw_sources r ON r.id = e.raw_id
		WHERE e.id = ?`, emailID).Scan(&codec, &size, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrRawNotCaptured
	}
	if err != nil {
		return nil, fmt.Errorf("get raw message: %w", err)
	}
	raw, _, err := splitRaw(codec, size, data) // a small message's body follows its raw source
	if err != nil {
		return nil, fmt.Errorf("get raw message: %w", err)
	}
	return raw, nil
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

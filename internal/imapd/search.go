package imapd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/catchbox/catchbox/internal/inbox"
)

// Search implements imapserver.Session (SEARCH and UID SEARCH, RFC 9051
// section 6.4.4): sequence numbers and UIDs, INTERNALDATE (BEFORE, ON,
// SINCE: the receipt date in UTC), the Date header (SENT*), header fields,
// BODY and TEXT (case-insensitive substrings of the decoded text parts and
// header fields), flags, sizes, and their NOT and OR. A message is read only
// when a criterion needs it.
func (s *session) Search(kind imapserver.NumKind, criteria *imap.SearchCriteria, options *imap.SearchOptions) (data *imap.SearchData, err error) {
	err = s.do("SEARCH", func(ctx context.Context) error {
		data = &imap.SearchData{}
		var seqs imap.SeqSet
		var uids imap.UIDSet
		for _, t := range s.view.resolve(imap.UIDSet{imap.UIDRange{Start: 1, Stop: 0}}) {
			c := &candidate{s: s, ctx: ctx, t: t}
			ok, err := c.match(criteria)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			uids.AddNum(imap.UID(t.msg.UID))
			num := t.seq
			if kind == imapserver.NumKindUID {
				num = t.msg.UID
			} else {
				seqs.AddNum(t.seq)
			}
			if data.Min == 0 || num < data.Min {
				data.Min = num
			}
			if num > data.Max {
				data.Max = num
			}
			data.Count++
		}
		if kind == imapserver.NumKindUID {
			data.All = uids
		} else {
			data.All = seqs
		}
		if options.ReturnSave {
			s.view.searchRes = uids
		}
		return nil
	})
	return data, err
}

// candidate is one message under a search, read at most once.
type candidate struct {
	s   *session
	ctx context.Context
	t   target
	src []byte
	err error
}

func (c *candidate) source() []byte {
	if c.src == nil && c.err == nil {
		c.src, c.err = c.s.source(c.ctx, c.t.msg)
	}
	return c.src
}

func (c *candidate) header() mail.Header {
	h, _ := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(c.source())))
	return mail.Header{Header: gomessage.Header{Header: h}}
}

func (c *candidate) match(cr *imap.SearchCriteria) (bool, error) {
	ok := c.matchNoErr(cr)
	return ok, c.err
}

func (c *candidate) matchNoErr(cr *imap.SearchCriteria) bool {
	m := c.t.msg
	for _, set := range cr.SeqNum {
		if imap.IsSearchRes(set) {
			if !c.s.view.searchRes.Contains(imap.UID(m.UID)) {
				return false
			}
			continue
		}
		if !containsDynamic(set, c.t.seq, uint32(len(c.s.view.uids))) {
			return false
		}
	}
	for _, set := range cr.UID {
		if imap.IsSearchRes(set) {
			set = c.s.view.searchRes
		}
		last := uint32(0)
		if n := len(c.s.view.uids); n > 0 {
			last = c.s.view.uids[n-1]
		}
		if !containsDynamicUID(set, m.UID, last) {
			return false
		}
	}
	if !matchDate(time.UnixMilli(m.ReceivedMs).UTC(), cr.Since, cr.Before) {
		return false
	}
	for _, f := range cr.Flag {
		if !hasFlag(m.Flags, f) {
			return false
		}
	}
	for _, f := range cr.NotFlag {
		if hasFlag(m.Flags, f) {
			return false
		}
	}
	if cr.Larger != 0 || cr.Smaller != 0 {
		size := m.Size
		if !m.RawKept {
			n, known := c.s.mb.rebuiltSize(m.EmailID)
			if !known {
				n = int64(len(c.source()))
			}
			size = n
		}
		if cr.Larger != 0 && size <= cr.Larger || cr.Smaller != 0 && size >= cr.Smaller {
			return false
		}
	}
	if !cr.SentSince.IsZero() || !cr.SentBefore.IsZero() {
		h := c.header()
		t, err := h.Date()
		if err != nil || !matchDate(t, cr.SentSince, cr.SentBefore) {
			return false
		}
	}
	if len(cr.Header) > 0 {
		h := c.header()
		for _, hf := range cr.Header {
			if !matchFields(h.FieldsByKey(hf.Key), hf.Value) {
				return false
			}
		}
	}
	for _, text := range cr.Body {
		if !matchEntity(c.entity(), text, false) {
			return false
		}
	}
	for _, text := range cr.Text {
		if !matchEntity(c.entity(), text, true) {
			return false
		}
	}
	for i := range cr.Not {
		if c.matchNoErr(&cr.Not[i]) {
			return false
		}
	}
	for i := range cr.Or {
		if !c.matchNoErr(&cr.Or[i][0]) && !c.matchNoErr(&cr.Or[i][1]) {
			return false
		}
	}
	return c.err == nil
}

func (c *candidate) entity() *gomessage.Entity {
	e, _ := gomessage.Read(bytes.NewReader(c.source()))
	if e == nil {
		e, _ = gomessage.New(gomessage.Header{}, bytes.NewReader(nil))
	}
	return e
}

// hasFlag reports whether flags hold f. \Recent is never set (IMAP4rev2 has
// none) and keywords are not kept.
func hasFlag(flags inbox.Flags, f imap.Flag) bool {
	bit := flagBits([]imap.Flag{f})
	return bit != 0 && flags&bit != 0
}

func containsDynamic(set imap.SeqSet, num, largest uint32) bool {
	for _, r := range set {
		start, stop := dynamic(r.Start, r.Stop, largest)
		if num >= start && num <= stop {
			return true
		}
	}
	return false
}

func containsDynamicUID(set imap.UIDSet, uid, largest uint32) bool {
	for _, r := range set {
		start, stop := dynamic(uint32(r.Start), uint32(r.Stop), largest)
		if uid >= start && uid <= stop {
			return true
		}
	}
	return false
}

// matchDate compares dates without their times and zones, as RFC 9051
// section 6.4.4 asks.
func matchDate(t, since, before time.Time) bool {
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if !since.IsZero() && d.Before(since) {
		return false
	}
	if !before.IsZero() && !d.Before(before) {
		return false
	}
	return true
}

func matchFields(fields gomessage.HeaderFields, pattern string) bool {
	if pattern == "" {
		return fields.Len() > 0
	}
	pattern = strings.ToLower(pattern)
	for fields.Next() {
		v, err := fields.Text()
		if err != nil {
			v = fields.Value()
		}
		if strings.Contains(strings.ToLower(v), pattern) {
			return true
		}
	}
	return false
}

// matchEntity looks for a case-insensitive substring in the decoded text
// parts of e, and with header in its header fields too.
func matchEntity(e *gomessage.Entity, pattern string, header bool) bool {
	if pattern == "" {
		return true
	}
	if header && matchFields(e.Header.Fields(), pattern) {
		return true
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			part, err := mr.NextPart()
			if err != nil {
				return false
			}
			if matchEntity(part, pattern, header) {
				return true
			}
		}
	}
	t, _, _ := e.Header.ContentType()
	if t != "" && !strings.HasPrefix(t, "text/") && !strings.HasPrefix(t, "message/") {
		return false
	}
	buf, err := io.ReadAll(io.LimitReader(e.Body, 64<<20))
	if err != nil && len(buf) == 0 {
		return false
	}
	return bytes.Contains(bytes.ToLower(buf), bytes.ToLower([]byte(pattern)))
}

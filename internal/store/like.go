package store

import "strings"

// likeEscaper escapes the LIKE wildcards and the escape character itself.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// EscapeLike makes s match itself literally in a LIKE pattern written with
// ESCAPE '\' (the same on SQLite and PostgreSQL): "50%_off" matches only that
// text, not "50 percent off".
func EscapeLike(s string) string { return likeEscaper.Replace(s) }

// PrefixUpperBound returns the smallest string greater than every string that
// starts with p, in byte order, so that "col >= p AND col < bound" is a range
// scan of an index (columns compare bytewise: COLLATE "C" on PostgreSQL). ok is
// false when there is no such string (p is empty or all 0xFF bytes).
func PrefixUpperBound(p string) (bound string, ok bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

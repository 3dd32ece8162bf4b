package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
)

var funcs = template.FuncMap{
	"addr": func(a inbox.Address) string {
		if a.Name != "" {
			return a.Name + " <" + a.Address + ">"
		}
		return a.Address
	},
	"who": func(a inbox.Address) string {
		if a.Name != "" {
			return a.Name
		}
		return a.Address
	},
	"addrs": func(as []inbox.Address) string {
		s := make([]string, len(as))
		for i, a := range as {
			s[i] = a.Address
			if a.Name != "" {
				s[i] = a.Name + " <" + a.Address + ">"
			}
		}
		return strings.Join(s, ", ")
	},
	"unix":    func(sec int64) time.Time { return time.Unix(sec, 0).UTC() },
	"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"when":    func(t time.Time) template.HTML { return timeElement(t, false) },
	"whenSec": func(t time.Time) template.HTML { return timeElement(t, true) },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
	"size": func(n int64) string {
		switch {
		case n < 1024:
			return fmt.Sprintf("%d B", n)
		case n < 1024*1024:
			return fmt.Sprintf("%.1f KB", float64(n)/1024)
		default:
			return fmt.Sprintf("%.1f MB", float64(n)/1024/1024)
		}
	},
	"seconds": func(n int) string {
		d := time.Duration(n) * time.Second
		switch {
		case n%86400 == 0:
			return fmt.Sprintf("%d d", n/86400)
		case n%3600 == 0:
			return fmt.Sprintf("%d h", n/3600)
		case n%60 == 0:
			return fmt.Sprintf("%d min", n/60)
		}
		return d.String()
	},
	"add":    func(a, b int) int { return a + b },
	"list":   func(s ...string) []string { return s },
	"deref":  func(p *int) int { return *p },
	"derefT": func(p *time.Time) time.Time { return *p },
	"initial": func(s string) string {
		for _, r := range s {
			return strings.ToUpper(string(r))
		}
		return "?"
	},
}

// timeElement shows a time with its date and zone: written in UTC ("28 Nov
// 2026, 15:04 UTC"), which app.js rewrites in the browser's own zone and
// language ("Nov 28, 4:04 PM GMT+1"); seconds when the exact second matters
// (a list of mail that arrives seconds apart). Only the time goes into the
// HTML, so it needs no escaping.
func timeElement(t time.Time, seconds bool) template.HTML {
	layout, kind := "2 Jan 2006, 15:04 UTC", "minutes"
	if seconds {
		layout, kind = "2 Jan 2006, 15:04:05 UTC", "seconds"
	}
	t = t.UTC()
	return template.HTML(`<time datetime="` + t.Format("2006-01-02T15:04:05Z") + `" data-local="` + kind + `">` + t.Format(layout) + `</time>`)
}

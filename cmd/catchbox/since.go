package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/catchbox/catchbox/client"
)

// started is when the command started: the default --since counts back from
// it.
var started = time.Now()

// sinceFlag is the --since of the client commands that wait.
type sinceFlag struct {
	Since string `name:"since" placeholder:"T" help:"Match only what was received at or after T: RFC 3339 (2026-11-27T10:00:00Z), Unix seconds (1795579364), or a duration meaning that long ago (5m). Default: 30s before the command started, so that old mail never passes a new run."`

	// since is --since read, zero without it: the Go client then applies
	// the same default itself (client.RecentWindow before the call).
	since time.Time
}

// Validate reads --since (kong calls it after parsing): a bad value is a
// usage error that names the flag.
func (f *sinceFlag) Validate() error {
	if strings.TrimSpace(f.Since) == "" {
		return nil
	}
	t, err := parseSince(f.Since, started)
	if err != nil {
		return err
	}
	f.since = t
	return nil
}

// parseSince reads a --since value relative to now: "" is client.RecentWindow
// (30 s) before
// now; a number is Unix seconds (a fraction allowed); else RFC 3339; else a
// duration back from now.
func parseSince(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return now.Add(-client.RecentWindow), nil
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		if secs < 0 {
			return time.Time{}, fmt.Errorf("--since must not be negative, not %q", v)
		}
		whole, frac := math.Modf(secs)
		return time.Unix(int64(whole), int64(frac*1e9)), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since: a duration means that long ago and must not be negative, not %q", v)
		}
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since must be RFC 3339 (2026-11-27T10:00:00Z), Unix seconds or a duration such as 5m, not %q", v)
}

// describeSince says, in an error, since when a wait looked, and how to look
// further back.
func (f *sinceFlag) describeSince() string {
	t := f.since
	if t.IsZero() {
		t = started.Add(-client.RecentWindow)
	}
	return "received since " + t.UTC().Format(time.RFC3339) + "; --since looks further back"
}

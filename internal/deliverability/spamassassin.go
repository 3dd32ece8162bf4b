package deliverability

import (
	"context"
	"errors"
	"slices"
	"time"
)

// SpamAssassinResult is the spamassassin section: the score a real spamd
// gives the message, its threshold and the rules that hit.
type SpamAssassinResult struct {
	Section
	// Available is whether spamd was configured and answered.
	Available bool       `json:"available"`
	Score     *float64   `json:"score,omitempty"`
	Threshold *float64   `json:"threshold,omitempty"`
	IsSpam    *bool      `json:"is_spam,omitempty"`
	Rules     []SpamRule `json:"rules"`
}

// nearSpam is the fraction of the threshold from which a score is a warning:
// a little more (a different receiver's rules, a blocklist hit) makes it spam.
const nearSpam = 0.5

// checkSpamAssassin asks spamd for its REPORT on the message, with the trace
// fields a receiving server would add.
func checkSpamAssassin(ctx context.Context, e *env, sd *Spamd, byHost string, received time.Time) *SpamAssassinResult {
	r := &SpamAssassinResult{Rules: []SpamRule{}}
	defer r.finish()
	if sd == nil {
		r.add(Warning, "spamassassin_not_configured", nil,
			"No SpamAssassin is configured on this server (CATCHBOX_SPAMD_ADDR), so the message was not scored. Run spamd and set CATCHBOX_SPAMD_ADDR to its address.")
		return r
	}
	v, err := sd.Report(ctx, WithTrace(e.in.Raw, e.in, byHost, received))
	switch {
	case errors.Is(err, ErrTooLarge):
		r.add(Warning, "spamassassin_too_large", map[string]any{"size_bytes": len(e.in.Raw), "limit_bytes": MaxScanBytes},
			"The message is larger than the %d KB SpamAssassin is given (spamc's own limit), so it was not scored; receivers running SpamAssassin skip it the same way.", MaxScanBytes>>10)
		return r
	case err != nil:
		r.add(Warning, "spamassassin_unavailable", map[string]any{"error": err.Error()},
			"SpamAssassin (spamd at %s) did not answer, so the message was not scored (%v). Check that spamd runs and accepts this server's connections.", sd.Addr, err)
		return r
	}
	r.Available = true
	r.Score, r.Threshold, r.IsSpam = &v.Score, &v.Threshold, &v.IsSpam
	r.Rules = v.Rules
	slices.SortStableFunc(r.Rules, func(a, b SpamRule) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	d := map[string]any{"score": v.Score, "threshold": v.Threshold, "rules": topRules(r.Rules)}
	switch {
	case v.IsSpam || v.Score >= v.Threshold:
		r.add(Fail, "spamassassin_spam", d,
			"SpamAssassin scores this message %.1f, at or above its spam threshold of %.1f, so receivers running it file the message as spam. The rules that hit say why, largest first: change what they match.", v.Score, v.Threshold)
	case v.Score >= v.Threshold*nearSpam:
		r.add(Warning, "spamassassin_near_threshold", d,
			"SpamAssassin scores this message %.1f, below its spam threshold of %.1f but more than half of it; a receiver with stricter rules may file it as spam. The rules that hit say why, largest first.", v.Score, v.Threshold)
	default:
		r.add(Pass, "spamassassin_ok", d, "SpamAssassin scores this message %.1f, well below its spam threshold of %.1f.", v.Score, v.Threshold)
	}
	return r
}

// topRules are the rules worth naming in an issue: those that added points.
func topRules(rules []SpamRule) []SpamRule {
	out := []SpamRule{}
	for _, r := range rules {
		if r.Score > 0 && len(out) < 10 {
			out = append(out, r)
		}
	}
	return out
}

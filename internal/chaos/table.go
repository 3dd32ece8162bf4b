package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
)

// Topic is the notify topic of changes to any namespace's rules.
const Topic = "chaos:rules"

// RefreshInterval is how often Watch reads the rules' version when no
// notification came: the bound on how long a change made where no
// notification reaches this process (the admin command line on SQLite, a
// lost PostgreSQL listener) takes to apply.
const RefreshInterval = 2 * time.Second

// Table is this process's copy of every namespace's rules, which the SMTP
// listener consults for each command of a mail transaction. A namespace
// without rules costs one map lookup and no store access; the copy is
// replaced whole when the rules' version in the store changes: at once after
// a change made through this process's Service, on a notification from
// another replica (Watch), and otherwise within RefreshInterval.
type Table struct {
	db   *store.DB
	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // one refresh at a time

	// Rand draws the chance a probability rule is compared with, in [0, 1);
	// nil is math/rand/v2. Tests set it.
	Rand func() float64
}

// snapshot is one read of every rule list, at one version.
type snapshot struct {
	version int64
	sets    map[string]*set // by namespace id
}

// set is one namespace's rules as the listener applies them.
type set struct {
	generation int64
	stages     map[Stage]bool // stages that have at least one rule
	rules      []compiled
}

type compiled struct {
	Rule
	index int
	reply *Reply
}

// NewTable returns an empty table over db; call Refresh (or Watch) before
// relying on it.
func NewTable(db *store.DB) *Table {
	t := &Table{db: db}
	t.snap.Store(&snapshot{version: -1})
	return t
}

// Refresh reads the rules again when their version in the store has changed
// since the last read: one small query when nothing changed.
func (t *Table) Refresh(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var version int64
	if err := t.db.QueryRow(ctx, "SELECT version FROM chaos_version WHERE id = 1").Scan(&version); err != nil {
		return fmt.Errorf("read the chaos rules' version: %w", err)
	}
	if version == t.snap.Load().version {
		return nil
	}
	next := &snapshot{sets: map[string]*set{}}
	err := t.db.InReadTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT version FROM chaos_version WHERE id = 1").Scan(&next.version); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT namespace_id, generation, rules FROM chaos_rules")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var nsID, text string
			var gen int64
			if err := rows.Scan(&nsID, &gen, &text); err != nil {
				return err
			}
			var rules []Rule
			if err := json.Unmarshal([]byte(text), &rules); err != nil {
				slog.Error("A namespace's chaos rules are not readable; they are not applied", "namespace_id", nsID, "err", err)
				continue
			}
			if s := compile(gen, rules); s != nil {
				next.sets[nsID] = s
			}
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("read the chaos rules: %w", err)
	}
	t.snap.Store(next)
	return nil
}

func compile(gen int64, rules []Rule) *set {
	if len(rules) == 0 {
		return nil
	}
	s := &set{generation: gen, stages: map[Stage]bool{}}
	for i, r := range rules {
		c := compiled{Rule: r, index: i}
		if r.Reply != "" {
			rp, err := ParseReply(r.Reply)
			if err != nil {
				continue // validated when set; never here
			}
			c.reply = &rp
		}
		c.Match = strings.ToLower(c.Match)
		s.rules = append(s.rules, c)
		s.stages[r.Stage] = true
	}
	return s
}

// Watch keeps the table current until ctx ends: it refreshes on every
// notification of a change (from another replica on PostgreSQL) and every
// RefreshInterval. n may be nil. A failed refresh is logged and retried at
// the next tick; the table keeps its last copy meanwhile.
func (t *Table) Watch(ctx context.Context, n notify.Notifier) error {
	var wake <-chan struct{}
	if n != nil {
		sub := n.Subscribe(Topic)
		defer sub.Close()
		wake = sub.C
	}
	tick := time.NewTicker(RefreshInterval)
	defer tick.Stop()
	failing := false
	for {
		err := t.safeRefresh(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			slog.Warn("Reading the chaos rules failed; the last copy applies until a read works", "err", err)
			failing = true
		case err == nil && failing:
			slog.Info("Reading the chaos rules works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-tick.C:
		}
	}
}

func (t *Table) safeRefresh(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Panic while reading the chaos rules", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return t.Refresh(ctx)
}

// Fault is what a rule that fired asks of the SMTP listener.
type Fault struct {
	NamespaceID string
	Stage       Stage
	Rule        int    // the rule's position in the namespace's list
	Reply       *Reply // nil: the normal reply (after Delay)
	Delay       time.Duration
	Disconnect  bool
}

// Action names what the fault does, for logs and metrics: reply, delay,
// disconnect, or several joined with '+' (delay+reply+disconnect).
func (f Fault) Action() string {
	var parts []string
	if f.Delay > 0 {
		parts = append(parts, "delay")
	}
	if f.Reply != nil {
		parts = append(parts, "reply")
	}
	if f.Disconnect {
		parts = append(parts, "disconnect")
	}
	return strings.Join(parts, "+")
}

// String is the fault as the SMTP log names it: "rcpt rules[0] reply 451".
func (f Fault) String() string {
	s := fmt.Sprintf("%s rules[%d] %s", f.Stage, f.Rule, f.Action())
	if f.Reply != nil {
		s += fmt.Sprintf(" %d", f.Reply.Code)
	}
	return s
}

// Has reports whether the namespace has a rule at the stage: an atomic load
// and a map lookup, so that a listener can skip the work of collecting the
// addresses Fire needs.
func (t *Table) Has(namespaceID string, stage Stage) bool {
	s := t.snap.Load().sets[namespaceID]
	return s != nil && s.stages[stage]
}

// Fire decides whether a rule of the namespace fires at the stage for a
// message to (or, at the mail stage, from) addrs: the first rule of the
// stage that matches one of the addresses (every rule matches when it has no
// match) and whose probability or count lets it fire wins. A rule with every
// counts each matching message that reaches it, in the store; a failure to
// count is logged and the rule does not fire.
func (t *Table) Fire(ctx context.Context, namespaceID string, stage Stage, addrs ...string) (Fault, bool) {
	s := t.snap.Load().sets[namespaceID]
	if s == nil || !s.stages[stage] {
		return Fault{}, false
	}
	for _, r := range s.rules {
		if r.Stage != stage || !matches(r.Match, addrs) {
			continue
		}
		if !t.draw(ctx, namespaceID, s.generation, r) {
			continue
		}
		return Fault{NamespaceID: namespaceID, Stage: stage, Rule: r.index, Reply: r.reply,
			Delay: time.Duration(r.DelayMS) * time.Millisecond, Disconnect: r.Disconnect}, true
	}
	return Fault{}, false
}

func matches(pattern string, addrs []string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	for _, a := range addrs {
		if Glob(pattern, strings.ToLower(a)) {
			return true
		}
	}
	return false
}

// draw tells whether a matching rule fires this time.
func (t *Table) draw(ctx context.Context, namespaceID string, gen int64, r compiled) bool {
	if r.Every != nil {
		n, err := count(ctx, t.db, namespaceID, gen, r.index)
		if err != nil {
			slog.Warn("Counting a chaos rule's messages failed; the rule does not fire this time",
				"namespace_id", namespaceID, "rule", r.index, "err", err)
			return false
		}
		return n%int64(*r.Every) == 0
	}
	if r.Probability == nil || *r.Probability >= 1 {
		return true
	}
	if *r.Probability <= 0 {
		return false
	}
	draw := rand.Float64
	if t.Rand != nil {
		draw = t.Rand
	}
	return draw() < *r.Probability
}

// count adds one to the rule's counter and returns the new count: one
// statement, so that connections on any replica never count the same
// message twice or lose one.
func count(ctx context.Context, db *store.DB, namespaceID string, gen int64, rule int) (int64, error) {
	var n int64
	err := db.InTxUnsynced(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO chaos_counters (namespace_id, generation, rule, hits) VALUES (?, ?, ?, 1)
			ON CONFLICT (namespace_id, generation, rule) DO UPDATE SET hits = chaos_counters.hits + 1
			RETURNING hits`, namespaceID, gen, rule).Scan(&n)
	})
	return n, err
}

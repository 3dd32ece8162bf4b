package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Service holds the operations on a namespace's fault rules. Each takes the
// principal acting and a typed request, and returns a typed result or a
// *problem.Error; the HTTP API, the dashboard and the admin command line call
// them and only translate.
type Service struct {
	db       *store.DB
	tenants  *tenant.Service
	notifier notify.Notifier
	table    *Table
}

// NewService returns the operations over db. table, when not nil, is
// refreshed after each change before the operation returns, so that this
// process's SMTP listener applies the change to the next command it reads;
// notifier (may be nil) tells the other replicas.
func NewService(db *store.DB, tenants *tenant.Service, notifier notify.Notifier, table *Table) *Service {
	return &Service{db: db, tenants: tenants, notifier: notifier, table: table}
}

// SetRequest replaces a namespace's rules.
type SetRequest struct {
	Namespace string
	Rules     []Rule
}

// NamespaceRequest names the namespace whose rules are read or cleared.
type NamespaceRequest struct {
	Namespace string
}

// RuleList is a namespace's rules, in the order they are tried.
type RuleList struct {
	Namespace string
	Rules     []Rule
}

// SetRules replaces the namespace's rules (an empty list leaves none). The
// namespace must be the principal organisation's own: a namespace it cannot
// see, or one shared with it by another, is not found. A refused request
// leaves the rules as they were.
func (s *Service) SetRules(ctx context.Context, p tenant.Principal, req SetRequest) (RuleList, error) {
	ns, err := s.ownNamespace(ctx, p, req.Namespace)
	if err != nil {
		return RuleList{}, err
	}
	if fe := problems(req.Rules); len(fe) > 0 {
		return RuleList{}, fe.Error()
	}
	rules := make([]Rule, len(req.Rules))
	for i, r := range req.Rules {
		rules[i] = canonical(r)
	}
	text, err := json.Marshal(rules)
	if err != nil {
		return RuleList{}, fmt.Errorf("encode chaos rules: %w", err)
	}
	err = s.change(ctx, ns.ID, func(tx *store.Tx, gen int64) error {
		if len(rules) == 0 {
			_, err := tx.Exec(ctx, "DELETE FROM chaos_rules WHERE namespace_id = ?", ns.ID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO chaos_rules (namespace_id, generation, rules, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (namespace_id) DO UPDATE SET generation = excluded.generation, rules = excluded.rules, updated_at = excluded.updated_at`,
			ns.ID, gen, string(text), store.NowMillis())
		return err
	})
	if err != nil {
		return RuleList{}, err
	}
	slog.Info("Chaos rules set", "namespace", ns.Name, "org_id", ns.OrgID, "rules", len(rules), "by", p.ID())
	return RuleList{Namespace: ns.Name, Rules: rules}, nil
}

// Rules returns the namespace's rules; an empty list when it has none.
func (s *Service) Rules(ctx context.Context, p tenant.Principal, req NamespaceRequest) (RuleList, error) {
	ns, err := s.ownNamespace(ctx, p, req.Namespace)
	if err != nil {
		return RuleList{}, err
	}
	var text string
	err = s.db.QueryRow(ctx, "SELECT rules FROM chaos_rules WHERE namespace_id = ?", ns.ID).Scan(&text)
	switch {
	case isNoRows(err):
		return RuleList{Namespace: ns.Name, Rules: []Rule{}}, nil
	case err != nil:
		return RuleList{}, fmt.Errorf("read chaos rules: %w", err)
	}
	rules := []Rule{}
	if err := json.Unmarshal([]byte(text), &rules); err != nil {
		return RuleList{}, fmt.Errorf("decode chaos rules of namespace %s: %w", ns.ID, err)
	}
	return RuleList{Namespace: ns.Name, Rules: rules}, nil
}

// ClearRules removes every rule of the namespace; clearing a namespace that
// has none is not an error.
func (s *Service) ClearRules(ctx context.Context, p tenant.Principal, req NamespaceRequest) error {
	ns, err := s.ownNamespace(ctx, p, req.Namespace)
	if err != nil {
		return err
	}
	err = s.change(ctx, ns.ID, func(tx *store.Tx, _ int64) error {
		_, err := tx.Exec(ctx, "DELETE FROM chaos_rules WHERE namespace_id = ?", ns.ID)
		return err
	})
	if err != nil {
		return err
	}
	slog.Info("Chaos rules cleared", "namespace", ns.Name, "org_id", ns.OrgID, "by", p.ID())
	return nil
}

// change runs write in one transaction with a new version of the rules
// (which is the namespace's new generation): the namespace's counters are
// dropped, the other replicas told when it commits, and this process's table
// refreshed before change returns.
func (s *Service) change(ctx context.Context, namespaceID string, write func(tx *store.Tx, gen int64) error) error {
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var gen int64
		if err := tx.QueryRow(ctx, "UPDATE chaos_version SET version = version + 1 WHERE id = 1 RETURNING version").Scan(&gen); err != nil {
			return fmt.Errorf("next chaos version: %w", err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM chaos_counters WHERE namespace_id = ?", namespaceID); err != nil {
			return fmt.Errorf("reset chaos counters: %w", err)
		}
		if err := write(tx, gen); err != nil {
			return fmt.Errorf("write chaos rules: %w", err)
		}
		if s.notifier != nil {
			if err := s.notifier.Announce(ctx, tx, Topic); err != nil {
				return err
			}
			tx.AfterCommit(func() { s.notifier.Publish(ctx, Topic) })
		}
		return nil
	})
	if err != nil {
		return err
	}
	if s.table != nil {
		if err := s.table.Refresh(ctx); err != nil {
			// The change is committed; Watch applies it at its next tick.
			slog.Warn("Reading the chaos rules after a change failed", "err", err)
		}
	}
	return nil
}

// ownNamespace finds the principal organisation's own namespace by name.
func (s *Service) ownNamespace(ctx context.Context, p tenant.Principal, name string) (tenant.Namespace, error) {
	notFound := problem.NotFoundf("namespace " + strconv.Quote(clip(name)))
	if p.Org.ID == "" {
		return tenant.Namespace{}, notFound
	}
	ns, err := s.tenants.VisibleNamespace(ctx, p.Org.ID, name)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return tenant.Namespace{}, notFound
	case err != nil:
		return tenant.Namespace{}, fmt.Errorf("find namespace: %w", err)
	case ns.OrgID != p.Org.ID:
		// A namespace shared with the organisation is read-only to it: its
		// owner decides how its SMTP behaves.
		return tenant.Namespace{}, notFound
	}
	return ns, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func isNoRows(err error) bool {
	return errors.Is(err, errNoRows)
}

var errNoRows = sql.ErrNoRows

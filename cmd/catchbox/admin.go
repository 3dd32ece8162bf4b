package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// adminCmd groups the admin commands of CONTRACT.md section 3. They open the
// configured store directly, so they work whether or not serve is running.
type adminCmd struct {
	config.Store `embed:""`
	RetentionMax time.Duration `name:"retention-max" env:"CATCHBOX_RETENTION_MAX" default:"720h" help:"Largest retention a namespace may set."`
	JSON         bool          `name:"json" help:"Print the created or changed object as one JSON object; an error too, as {\"error\", \"code\", \"message\"}."`
	Create       bool          `name:"create" help:"Create the store when it does not exist yet (without it, a missing store is refused: catchbox serve creates it on its first start)."`
	Verbose      bool          `name:"verbose" short:"v" help:"Say which store the command works on (on stderr)."`

	Org         orgCmd         `cmd:"" help:"Organisations."`
	Key         keyCmd         `cmd:"" help:"API keys."`
	Namespace   namespaceCmd   `cmd:"" help:"Namespaces (inboxes)."`
	SMSNumber   smsNumberCmd   `cmd:"" name:"sms-number" help:"SMS numbers."`
	Destination destinationCmd `cmd:"" help:"Verified external destinations of outbound mail."`
	User        userCmd        `cmd:"" help:"Dashboard users."`
	Webhook     webhookCmd     `cmd:"" help:"Webhook endpoints."`
	SigninLink  signinLinkCmd  `cmd:"" name:"signin-link" help:"Print a one-time link that signs a browser in to the dashboard as a user."`
}

// Validate refuses empty store settings (kong calls it after parsing).
func (a *adminCmd) Validate() error { return a.Store.CheckStore() }

// adminEnv is what every admin command works with.
type adminEnv struct {
	ctx     context.Context
	db      *store.DB
	tenants *tenant.Service
	key     *secret.Key
	json    bool
	out     io.Writer
}

// openOrg opens the store and finds the organisation named name, for the
// commands that act on one.
func (a *adminCmd) openOrg(name string) (*adminEnv, tenant.Org, func(), error) {
	env, done, err := a.open()
	if err != nil {
		return nil, tenant.Org{}, nil, err
	}
	o, err := env.tenants.OrgByName(env.ctx, name)
	if err != nil {
		done()
		return nil, tenant.Org{}, nil, err
	}
	return env, o, done, nil
}

// actAs is the principal of the operator acting as the organisation o: the
// admin commands change an organisation's keys, namespaces and endpoints
// through the operations its users call, as its owner would.
func actAs(o tenant.Org) tenant.Principal {
	return tenant.Principal{Org: o, Orgs: []tenant.Org{o}}
}

func (a *adminCmd) open() (*adminEnv, func(), error) {
	ctx := context.Background()
	url := a.DatabaseURLOrDefault()
	if a.Verbose {
		fmt.Fprintln(os.Stderr, "Using store", describeStore(url))
	}
	if err := a.checkStore(ctx, url); err != nil {
		return nil, nil, err
	}
	db, err := server.OpenStore(ctx, a.Store)
	if err != nil {
		return nil, nil, err
	}
	key, err := secret.Load(a.DataDir, a.SecretKey)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	env := &adminEnv{ctx: ctx, db: db, tenants: tenant.NewService(db, key, a.RetentionMax), key: key, json: a.JSON, out: os.Stdout}
	return env, func() { db.Close() }, nil
}

// errNoStore is an admin command run where no store is: from the wrong
// directory, with ./data relative to it, it would otherwise make a new empty
// store that the running server never sees.
var errNoStore = errors.New("no store")

// checkStore refuses a store catchbox serve has not created, unless --create.
func (a *adminCmd) checkStore(ctx context.Context, url string) error {
	if a.Create {
		return nil
	}
	hint := "start catchbox serve with the same --data-dir or --database-url first, point this command at its store (CATCHBOX_DATA_DIR, CATCHBOX_DATABASE_URL), or pass --create to make a new one"
	if path, ok := strings.CutPrefix(url, "sqlite://"); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w at %s: %s", errNoStore, path, hint)
		}
		return nil
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	ok, err := db.Initialized(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w in %s (it has no Catchbox tables): %s", errNoStore, describeStore(url), hint)
	}
	return nil
}

// describeStore names a store for a person: the absolute path of a SQLite
// file, a PostgreSQL URL without its password.
func describeStore(raw string) string {
	if path, ok := strings.CutPrefix(raw, "sqlite://"); ok {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "sqlite://" + path
	}
	if u, err := neturl.Parse(raw); err == nil {
		if _, has := u.User.Password(); has {
			u.User = neturl.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	return raw
}

// print writes v as JSON with --json, else the plain text line.
func (e *adminEnv) print(v any, text string, args ...any) {
	if e.json {
		b, _ := json.Marshal(v)
		fmt.Fprintln(e.out, string(b))
		return
	}
	fmt.Fprintf(e.out, text+"\n", args...)
}

type orgCmd struct {
	List   orgListCmd   `cmd:"" help:"List the organisations."`
	Create orgCreateCmd `cmd:"" help:"Create an organisation."`
	Update orgUpdateCmd `cmd:"" help:"Change an organisation's TOTP settings."`
	Usage  orgUsageCmd  `cmd:"" help:"Outbound usage of an organisation in a month."`
}

type orgJSON struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	TOTPDeviceLimit int    `json:"totp_device_limit"`
	TOTPEnabled     bool   `json:"totp_enabled"`
}

func orgView(o tenant.Org) orgJSON {
	return orgJSON{ID: o.ID, Name: o.Name, TOTPDeviceLimit: o.TOTPDeviceLimit, TOTPEnabled: o.TOTPEnabled}
}

type orgCreateCmd struct {
	Name            string `arg:"" help:"Organisation name."`
	TOTPDeviceLimit int    `name:"totp-device-limit" default:"100" help:"Most active TOTP devices."`
	TOTPEnabled     bool   `name:"totp-enabled" default:"true" negatable:"" help:"Whether TOTP devices may be created."`
}

func (c *orgCreateCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	o, err := env.tenants.CreateOrg(env.ctx, c.Name, c.TOTPDeviceLimit, c.TOTPEnabled)
	if err != nil {
		return err
	}
	env.print(orgView(o), "Created organisation %s (id %s, TOTP device limit %d, TOTP %s)", o.Name, o.ID, o.TOTPDeviceLimit, onOff(o.TOTPEnabled))
	return nil
}

type orgUpdateCmd struct {
	Name            string `arg:"" help:"Organisation name."`
	TOTPDeviceLimit *int   `name:"totp-device-limit" help:"Most active TOTP devices."`
	TOTPEnabled     *bool  `name:"totp-enabled" help:"Whether TOTP devices may be created (true or false)."`
}

func (c *orgUpdateCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	o, err := env.tenants.UpdateOrg(env.ctx, c.Name, c.TOTPDeviceLimit, c.TOTPEnabled)
	if err != nil {
		return err
	}
	env.print(orgView(o), "Updated organisation %s (TOTP device limit %d, TOTP %s)", o.Name, o.TOTPDeviceLimit, onOff(o.TOTPEnabled))
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

type keyCmd struct {
	Create keyCreateCmd `cmd:"" help:"Create an API key; it is printed once."`
	Revoke keyRevokeCmd `cmd:"" help:"Revoke an API key by id."`
	List   keyListCmd   `cmd:"" help:"List an organisation's API keys: id, label, created, last used (never the key)."`
}

type keyListCmd struct {
	Org string `name:"org" required:"" help:"Organisation name."`
}

// keyJSON is one key of key list --json.
type keyJSON struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	CreatedAt string `json:"created_at"`
	LastUsed  string `json:"last_used_at,omitempty"`
	RevokedAt string `json:"revoked_at,omitempty"`
}

func (c *keyListCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	o, err := env.tenants.OrgByName(env.ctx, c.Org)
	if err != nil {
		return fmt.Errorf("organisation %q: %w", c.Org, err)
	}
	keys, err := env.tenants.ListKeys(env.ctx, o.ID, true)
	if err != nil {
		return err
	}
	out := make([]keyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, keyJSON{ID: k.ID, Label: k.Label, CreatedAt: stamp(&k.CreatedAt), LastUsed: stamp(k.LastUsed), RevokedAt: stamp(k.RevokedAt)})
	}
	if env.json {
		env.print(map[string]any{"organisation": o.Name, "keys": out}, "")
		return nil
	}
	w := tabwriter.NewWriter(env.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tLABEL\tCREATED\tLAST USED\tREVOKED")
	for _, k := range out {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", k.ID, orDash(k.Label), k.CreatedAt, orDash(k.LastUsed), orDash(k.RevokedAt))
	}
	return w.Flush()
}

// stamp is an RFC 3339 UTC time, "" for none.
func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type keyCreateCmd struct {
	Org   string `name:"org" required:"" help:"Organisation name."`
	Label string `name:"label" help:"A note on what the key is for."`
}

func (c *keyCreateCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	k, err := env.tenants.CreateKeyFor(env.ctx, actAs(o), tenant.CreateKeyRequest{Label: c.Label})
	if err != nil {
		return asArgument(err)
	}
	env.print(map[string]string{"id": k.ID, "key": k.Key}, "Created API key %s for organisation %s (shown once, store it now):\n%s", k.ID, o.Name, k.Key)
	return nil
}

type keyRevokeCmd struct {
	ID string `arg:"" name:"key-id" help:"Id of the key, as printed by key create."`
}

func (c *keyRevokeCmd) Run(a *adminCmd) error {
	env, done, err := a.open()
	if err != nil {
		return err
	}
	defer done()
	o, err := env.tenants.KeyOrg(env.ctx, c.ID)
	if err != nil {
		return err
	}
	if _, err := env.tenants.RevokeKeyFor(env.ctx, actAs(o), tenant.RevokeKeyRequest{ID: c.ID}); err != nil {
		return err
	}
	env.print(map[string]any{"id": c.ID, "revoked": true}, "Revoked API key %s", c.ID)
	return nil
}

type namespaceCmd struct {
	List   namespaceListCmd   `cmd:"" help:"List the namespaces an organisation may read (its own and those shared with it)."`
	Create namespaceCreateCmd `cmd:"" help:"Create a namespace for an organisation."`
	Share  namespaceShareCmd  `cmd:"" help:"Let a second organisation read a namespace."`
	Chaos  namespaceChaosCmd  `cmd:"" help:"Set or clear a namespace's SMTP fault rules (JSON as the API's body)."`
}

type namespaceCreateCmd struct {
	Name      string `arg:"" help:"Namespace name (a DNS label)."`
	Org       string `name:"org" required:"" help:"Owning organisation."`
	Retention *int   `name:"retention" help:"Retention in seconds (default 86400)."`
}

func (c *namespaceCreateCmd) Run(a *adminCmd) error {
	env, o, done, err := a.openOrg(c.Org)
	if err != nil {
		return err
	}
	defer done()
	n, err := env.tenants.CreateNamespaceFor(env.ctx, actAs(o), tenant.NamespaceRequest{Name: c.Name, Settings: tenant.Settings{RetentionTime: c.Retention}})
	var pe *problem.Error
	if errors.As(err, &pe) && pe.Code == "namespace_taken" {
		return fmt.Errorf("namespace %q already exists: %w", c.Name, tenant.ErrNameTaken)
	}
	if err != nil {
		return asArgument(err)
	}
	env.print(map[string]any{"id": n.ID, "namespace": n.Name, "organisation_id": o.ID, "retention_time": n.RetentionTime},
		"Created namespace %s (id %s) for organisation %s, retention %d s", n.Name, n.ID, o.Name, n.RetentionTime)
	return nil
}

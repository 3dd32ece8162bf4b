package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/tenant"
)

// What a start prints on standard output, for the person who started it (the
// log, on standard error, is for operators and never carries a credential):
// the mode and what it means for mail, where the dashboard is (in local mode
// a one-time sign-in link for the default organisation's owner), and, on the
// first start of an empty store with a generated key, that key as a line to
// paste into a shell:
//
//	export CATCHBOX_API_KEY=cbx_...

// ensureCatchAll makes sure the catch-all namespace exists: a name that no
// namespace has yet is created in the default organisation (logged once); a
// store with no default organisation to create it in refuses the start, as
// does a name no namespace may take. The name is the configured one,
// CATCHBOX_CATCH_ALL (local mode's default: default).
func ensureCatchAll(ctx context.Context, cfg config.Serve, tenants *tenant.Service) (string, error) {
	name := cfg.CatchAllNamespace()
	if name == "" {
		return "", nil
	}
	name, err := tenant.NormalizeNamespaceName(name)
	if err != nil {
		return "", &config.SettingError{Flags: []string{"catch-all"},
			Reason: fmt.Sprintf("must be a namespace name or none, not %q: %v", cfg.CatchAllNamespace(), err)}
	}
	if _, err := tenants.NamespaceByName(ctx, name); err == nil {
		return name, nil
	} else if !errors.Is(err, tenant.ErrNotFound) {
		return "", fmt.Errorf("find the catch-all namespace: %w", err)
	}
	o, err := tenants.OrgByName(ctx, tenant.DefaultName)
	if errors.Is(err, tenant.ErrNotFound) {
		return "", &config.SettingError{Flags: []string{"catch-all"}, Reason: fmt.Sprintf(
			"names namespace %q, which does not exist, and there is no organisation %q to create it in: create it (catchbox admin namespace create %s --org NAME), or set it to none",
			name, tenant.DefaultName, name)}
	}
	if err != nil {
		return "", err
	}
	_, err = tenants.CreateNamespace(ctx, o.ID, name, tenant.Settings{})
	switch {
	case err == nil:
		slog.Info("Created the catch-all namespace in the default organisation", "namespace", name)
	case errors.Is(err, tenant.ErrNameTaken): // another replica made it first
	default:
		return "", fmt.Errorf("create the catch-all namespace: %w", err)
	}
	return name, nil
}

// startNote is what Run prints once the service is ready.
type startNote struct {
	mode, modeWhy string
	catchAll      string // "" for none
	mailDomain    string
	// signInPath is the path of a one-time sign-in link, "" for none.
	signInPath string
	owner      string
	// newKey is a key generated at this start, printed once.
	newKey string
}

// ownerNote names, in server mode, the user to ask a sign-in link for: the
// default organisation's owner when there is one (a store made before owners
// has none), else EMAIL.
func (s *Service) ownerNote(ctx context.Context, n *startNote) {
	n.owner = "EMAIL"
	if u, err := s.Tenants.UserByEmail(ctx, tenant.OwnerEmail); err == nil {
		n.owner = u.Email
	}
}

// signInNote prepares the local-mode sign-in link of the default
// organisation's owner (made on the first start, or now when the store
// predates owners). Without a default organisation there is no link, and a
// log line says so.
func (s *Service) signInNote(ctx context.Context, n *startNote) error {
	owner, err := s.Tenants.EnsureOwner(ctx)
	if errors.Is(err, tenant.ErrNotFound) {
		slog.Info("No sign-in link: the store has no default organisation; make one for a user with catchbox admin signin-link --user EMAIL")
		n.owner = "EMAIL"
		return nil
	}
	if err != nil {
		return err
	}
	token, _, err := s.Tenants.CreateSignInLink(ctx, owner.ID, time.Now())
	if err != nil {
		return err
	}
	n.owner = owner.Email
	n.signInPath = SignInPath(token)
	if n.catchAll != "" {
		ns, err := s.Tenants.NamespaceByName(ctx, n.catchAll)
		if def, derr := s.Tenants.OrgByName(ctx, tenant.DefaultName); err == nil && derr == nil && ns.VisibleTo(def.ID) {
			n.signInPath += "?next=" + url.QueryEscape("/inboxes/"+ns.Name)
		}
	}
	return nil
}

// SignInPath is the path of the sign-in link of token (web.SignInLinkHandler).
func SignInPath(token string) string { return "/signin/link/" + token }

// print writes the note for a service ready at r.
func (n startNote) print(w io.Writer, r Ready) {
	var b strings.Builder
	fmt.Fprintf(&b, "\nCatchbox is ready in %s mode (%s).\n", n.mode, n.modeWhy)
	smtpAddr := strings.Join(r.SMTPAddrs, ", ")
	if n.catchAll != "" {
		fmt.Fprintf(&b, "  SMTP       %s: mail to any address is caught; mail to <anything>@<namespace>.%s goes to that namespace, the rest to %q\n",
			smtpAddr, n.mailDomain, n.catchAll)
	} else {
		fmt.Fprintf(&b, "  SMTP       %s: mail to <anything>@<namespace>.%s, for an existing namespace\n", smtpAddr, n.mailDomain)
	}
	if n.signInPath != "" {
		fmt.Fprintf(&b, "  Dashboard  %s%s\n", r.PublicURL, n.signInPath)
		fmt.Fprintf(&b, "             (signs you in as %s; works once, within %d minutes: catchbox admin signin-link --user %s makes another)\n",
			n.owner, int(tenant.SignInLinkTTL.Minutes()), n.owner)
	} else {
		fmt.Fprintf(&b, "  Dashboard  %s/ (a sign-in link: catchbox admin signin-link --user %s)\n", r.PublicURL, n.owner)
	}
	fmt.Fprintf(&b, "  API        %s/api\n", r.PublicURL)
	if n.newKey != "" {
		fmt.Fprintf(&b, "\nCreated organisation %q with namespace %q and this API key (shown once, store it now):\n\nexport CATCHBOX_API_KEY=%s\n",
			tenant.DefaultName, tenant.DefaultName, n.newKey)
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// modeWhy says why the service is in its mode.
func modeWhy(cfg config.Serve) string {
	switch {
	case cfg.Mode.Mode != "":
		return "set by CATCHBOX_MODE"
	case cfg.IsLocal():
		return "the HTTP listener is on loopback and no public URL is set"
	case cfg.PublicURL != "":
		return "a public URL is set"
	}
	return "the HTTP listener is not on loopback"
}

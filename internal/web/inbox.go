package web

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// nsRow is one namespace in the list.
type nsRow struct {
	tenant.Namespace
	Count int
	Owned bool
}

func (d *Dashboard) namespacesPage(w http.ResponseWriter, r *http.Request) error {
	org := tenant.OrgFrom(r.Context())
	ns, err := d.Tenants.ListNamespaces(r.Context(), org.ID)
	if err != nil {
		return err
	}
	rows := make([]nsRow, 0, len(ns))
	for _, n := range ns {
		c, err := d.Inbox.Searcher.Count(r.Context(), n.ID)
		if err != nil {
			return err
		}
		rows = append(rows, nsRow{Namespace: n, Count: c, Owned: n.OrgID == org.ID})
	}
	return d.render(w, r, "namespaces", map[string]any{"Title": "Inboxes", "Nav": "inboxes", "Namespaces": rows,
		"MailDomain": d.MailDomain, "DefaultRetention": tenant.DefaultRetention, "RetentionMax": d.Tenants.RetentionMax()})
}

// NamespacesHandler answers GET /inboxes (the home page of a signed-in user).
func (d *Dashboard) NamespacesHandler(w http.ResponseWriter, r *http.Request) error {
	return d.namespacesPage(w, r)
}

// formInt reads an optional whole number from a form field.
func formInt(r *http.Request, field string) (*int, error) {
	v := strings.TrimSpace(r.PostForm.Get(field))
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, badRequest("%s must be a whole number.", field)
	}
	return &n, nil
}

// CreateNamespaceHandler answers POST /inboxes: a new namespace of the
// organisation (tenant.CreateNamespaceFor), its name refused in the page's
// words.
func (d *Dashboard) CreateNamespaceHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	ret, err := formInt(r, "retention_time")
	if err != nil {
		return err
	}
	name := strings.TrimSpace(r.PostForm.Get("namespace"))
	n, err := d.Tenants.CreateNamespaceFor(r.Context(), tenant.PrincipalFrom(r.Context()),
		tenant.NamespaceRequest{Name: name, Settings: tenant.Settings{RetentionTime: ret}})
	var pe *problem.Error
	switch {
	case !errors.As(err, &pe):
	case pe.Code == "invalid_namespace":
		return badRequest("The name %q is not valid: %v.", name, tenant.ErrNamespaceName)
	case pe.Code == "namespace_reserved":
		return badRequest("The name %q is reserved.", name)
	case pe.Code == "namespace_taken":
		return problem.Errorf(problem.Conflict, pe.Code, "The name %q is taken.", name)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/inboxes/"+n.Name, "Created inbox "+n.Name+".")
}

// namespaceParam is the {namespace} the user's organisation may read.
func (d *Dashboard) namespaceParam(r *http.Request) (tenant.Namespace, error) {
	n, err := d.Tenants.VisibleNamespace(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "namespace"))
	if errors.Is(err, tenant.ErrNotFound) {
		return n, notFound("Inbox")
	}
	return n, err
}

// ownNamespace is the {namespace} the user's organisation owns (a shared one
// may be read, not changed).
func (d *Dashboard) ownNamespace(r *http.Request) (tenant.Namespace, error) {
	n, err := d.namespaceParam(r)
	if err == nil && n.OrgID != tenant.OrgFrom(r.Context()).ID {
		return n, forbidden("namespace_read_only", "This inbox is shared with your organisation for reading only.")
	}
	return n, err
}

// SettingsHandler answers GET /inboxes/{namespace}/settings: settings, SMTP
// credentials and address hints.
func (d *Dashboard) SettingsHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.namespaceParam(r)
	if err != nil {
		return err
	}
	return d.settingsPage(w, r, n, nil)
}

// settingsPage renders the settings page; faults is the fault-rule section
// as a refused change left it, nil to read it afresh.
func (d *Dashboard) settingsPage(w http.ResponseWriter, r *http.Request, n tenant.Namespace, faults *chaosView) error {
	if faults == nil {
		var err error
		if faults, err = d.chaosSection(r, n); err != nil {
			return err
		}
	}
	data := map[string]any{"Chaos": faults, "Title": "Inbox " + n.Name + " settings", "Nav": "inboxes", "NS": n, "MailDomain": d.MailDomain,
		"Owned": n.OrgID == tenant.OrgFrom(r.Context()).ID, "RetentionMax": d.Tenants.RetentionMax(), "MaxQuota": tenant.MaxQuotaLimit}
	if n.OrgID == tenant.OrgFrom(r.Context()).ID {
		host, port := d.SMTPEndpoint()
		data["SMTP"] = map[string]any{"Host": host, "Port": port, "Username": n.Name, "Password": d.Tenants.SMTPPassword(n)}
		if d.MailboxPorts != nil {
			imapPort, pop3Port := d.MailboxPorts()
			data["Mailbox"] = map[string]any{"Host": host, "IMAPPort": imapPort, "POP3Port": pop3Port}
		}
	}
	return d.render(w, r, "settings", data)
}

// UpdateSettingsHandler answers POST /inboxes/{namespace}/settings
// (tenant.UpdateNamespaceFor).
func (d *Dashboard) UpdateSettingsHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.ownNamespace(r)
	if err != nil {
		return err
	}
	if err := parseForm(w, r); err != nil {
		return err
	}
	var st tenant.Settings
	if st.RetentionTime, err = formInt(r, "retention_time"); err != nil {
		return err
	}
	if st.QuotaLimit, err = formInt(r, "quota_limit"); err != nil {
		return err
	}
	st.ClearQuota = st.QuotaLimit == nil
	capture := r.PostForm.Get("capture_raw_email") == "on"
	st.CaptureRawEmail = &capture
	if _, err := d.Tenants.UpdateNamespaceFor(r.Context(), tenant.PrincipalFrom(r.Context()), tenant.NamespaceRequest{Name: n.Name, Settings: st}); err != nil {
		return err
	}
	return redirect(w, r, "/inboxes/"+n.Name+"/settings", "Settings saved.")
}

// inboxQuery reads the inbox page's filters: the API's search parameters,
// with 20 emails a page unless limit says otherwise.
func inboxQuery(r *http.Request) (inbox.Query, url.Values, error) {
	if err := localTimes(r); err != nil {
		return inbox.Query{}, nil, err
	}
	q, _, _, err := inbox.ParseSearch(r)
	if err != nil {
		return q, nil, err
	}
	if r.URL.Query().Get("limit") == "" {
		q.Limit = inbox.MaxLimit
	}
	keep := url.Values{}
	for _, k := range []string{"to_addr_prefix", "from_addr_includes", "subject_includes", "from_timestamp", "to_timestamp"} {
		if v := r.URL.Query().Get(k); v != "" {
			keep.Set(k, v)
		}
	}
	return q, keep, nil
}

// localLayout is how a browser's datetime-local input writes a time.
const localLayout = "2006-01-02T15:04"

// localTimes turns from_timestamp and to_timestamp given as the form's
// date and time (UTC, datetime-local) into the API's Unix seconds, so the
// page's filters are the API's; Unix seconds are taken as they are.
func localTimes(r *http.Request) error {
	q := r.URL.Query()
	changed := false
	for _, k := range []string{"from_timestamp", "to_timestamp"} {
		v := q.Get(k)
		if !strings.Contains(v, "T") {
			continue
		}
		layout := localLayout
		if len(v) > len(localLayout) {
			layout += ":05"
		}
		t, err := time.Parse(layout, v)
		if err != nil {
			return badRequest("%s must be a date and time, or Unix seconds.", k)
		}
		sec := t.Unix()
		if k == "to_timestamp" && layout == localLayout {
			sec += 59 // the whole minute
		}
		q.Set(k, strconv.FormatInt(sec, 10))
		changed = true
	}
	if changed {
		r.URL.RawQuery = q.Encode()
	}
	return nil
}

// localTime shows Unix seconds as the form's date and time (UTC).
func localTime(v string) string {
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	return time.Unix(sec, 0).UTC().Format(localLayout)
}

type inboxData struct {
	Title, Nav string
	NS         tenant.Namespace
	Owned      bool
	Total      int
	Emails     []inbox.Email
	Filters    url.Values
	Filtered   bool
	Offset     int
	Limit      int
	PrevURL    string
	NextURL    string
	RowsURL    string
	From, To   string
}

func (i inboxData) meta() (string, string) { return i.Title, i.Nav }

func (d *Dashboard) inboxData(r *http.Request) (inboxData, error) {
	n, err := d.namespaceParam(r)
	if err != nil {
		return inboxData{}, err
	}
	q, keep, err := inboxQuery(r)
	if err != nil {
		return inboxData{}, err
	}
	q.NamespaceID = n.ID
	res, err := d.Inbox.Searcher.Search(r.Context(), q)
	if err != nil {
		return inboxData{}, err
	}
	data := inboxData{Title: "Inbox " + n.Name, Nav: "inboxes", NS: n, Owned: n.OrgID == tenant.OrgFrom(r.Context()).ID,
		Total: res.Total, Emails: res.Emails, Filters: keep, Filtered: len(keep) > 0, Offset: q.Offset, Limit: q.Limit,
		From: localTime(keep.Get("from_timestamp")), To: localTime(keep.Get("to_timestamp"))}
	page := func(off int) string {
		v := url.Values{}
		for k, vs := range keep {
			v[k] = vs
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		if q.Limit != inbox.MaxLimit {
			v.Set("limit", strconv.Itoa(q.Limit))
		}
		if len(v) == 0 {
			return "/inboxes/" + n.Name
		}
		return "/inboxes/" + n.Name + "?" + v.Encode()
	}
	if q.Offset > 0 {
		data.PrevURL = page(max(0, q.Offset-q.Limit))
	}
	if q.Offset+len(res.Emails) < res.Total {
		data.NextURL = page(q.Offset + q.Limit)
	}
	if q.Offset == 0 {
		rows := url.Values{}
		for k, vs := range keep {
			rows[k] = vs
		}
		data.RowsURL = "/inboxes/" + n.Name + "/rows?" + rows.Encode()
	}
	return data, nil
}

// InboxHandler answers GET /inboxes/{namespace}: newest first, filtered as
// the API's search is, a page at a time; on the first page, new mail appears
// live (app.js, EventsHandler).
func (d *Dashboard) InboxHandler(w http.ResponseWriter, r *http.Request) error {
	data, err := d.inboxData(r)
	if err != nil {
		return err
	}
	return d.render(w, r, "inbox", data)
}

// RowsHandler answers GET /inboxes/{namespace}/rows: the first page's rows
// alone, which the live page swaps in when mail arrives.
func (d *Dashboard) RowsHandler(w http.ResponseWriter, r *http.Request) error {
	data, err := d.inboxData(r)
	if err != nil {
		return err
	}
	return d.fragment(w, r, "rows", data)
}

// ClearHandler answers POST /inboxes/{namespace}/clear (inbox.ClearInbox).
func (d *Dashboard) ClearHandler(w http.ResponseWriter, r *http.Request) error {
	n, err := d.ownNamespace(r)
	if err != nil {
		return err
	}
	c, err := d.Inbox.ClearInbox(r.Context(), tenant.PrincipalFrom(r.Context()), inbox.ClearRequest{Namespace: n.Name})
	if err != nil {
		return err
	}
	return redirect(w, r, "/inboxes/"+n.Name, fmt.Sprintf("Deleted %d emails.", c.Deleted))
}

// visibleEmail is the {emailId} the user's organisation may read, and its namespace.
func (d *Dashboard) visibleEmail(r *http.Request) (inbox.StoredEmail, tenant.Namespace, error) {
	id := chi.URLParam(r, "emailId")
	if _, err := uuid.Parse(id); err != nil {
		return inbox.StoredEmail{}, tenant.Namespace{}, notFound("Email")
	}
	e, err := d.Inbox.Searcher.ByID(r.Context(), strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) {
		return e, tenant.Namespace{}, notFound("Email")
	}
	if err != nil {
		return e, tenant.Namespace{}, err
	}
	n, err := d.Tenants.NamespaceByID(r.Context(), e.NamespaceID)
	if err != nil || !n.VisibleTo(tenant.OrgFrom(r.Context()).ID) {
		return inbox.StoredEmail{}, tenant.Namespace{}, notFound("Email")
	}
	return e, n, nil
}

type header struct{ Name, Value string }

// EmailHandler answers GET /emails/{emailId}: one email, its HTML in a
// sandboxed frame (BodyHandler), text, headers, attachments, raw source.
func (d *Dashboard) EmailHandler(w http.ResponseWriter, r *http.Request) error {
	e, n, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	atts, err := d.Inbox.AttachmentLinks(r.Context(), e.ID)
	if err != nil {
		return err
	}
	hs := make([]header, 0, len(e.Headers))
	for k, v := range e.Headers {
		hs = append(hs, header{k, v})
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name < hs[j].Name })
	tab := r.URL.Query().Get("tab")
	switch tab {
	case "html", "text", "headers", "raw", "links", "report", "reply", "clients":
	default:
		tab = "html"
		if e.HTML == "" {
			tab = "text"
		}
	}
	title := "Email: " + e.Subject
	if e.Subject == "" {
		title = "Email (no subject)"
	}
	data := map[string]any{"Title": title, "Nav": "inboxes", "E": e.Email, "NS": n, "Tab": tab,
		"Owned": n.OrgID == tenant.OrgFrom(r.Context()).ID, "Headers": hs, "Attachments": atts,
		"Images": r.URL.Query().Get("images") == "1", "MailDomain": d.MailDomain, "Received": time.Unix(e.ReceivedTimestamp, 0).UTC()}
	if tab == "raw" {
		raw, err := d.Inbox.Searcher.RawMessage(r.Context(), e.ID)
		switch {
		case errors.Is(err, inbox.ErrRawNotCaptured):
			data["RawMissing"] = true
		case err != nil:
			return err
		default:
			data["RawURL"], data["RawSize"] = d.Inbox.RawLink(e), int64(len(raw))
			const maxShown = 512 << 10
			if len(raw) > maxShown {
				raw, data["RawCut"] = raw[:maxShown], true
			}
			data["Raw"] = string(raw)
		}
	}
	switch tab {
	case "html":
		data["Preview"] = previewOf(r, e.ID, d.Previews.Enabled())
	case "clients":
		if data["Check"], err = d.checkOf(r.Context(), e); err != nil {
			return err
		}
	case "links":
		if data["LinkCheck"], err = d.linkCheck(r, e.ID); err != nil {
			return err
		}
	}
	if tab == "report" {
		rep, err := d.reportView(r, e.ID)
		if err != nil {
			return err
		}
		data["Report"] = rep
	}
	if n := noteFrom(r.Context()); n.Share != "" && n.EmailID == e.ID {
		data["Share"] = n.Share
	}
	return d.render(w, r, "email", data)
}

// bodyCSP is the policy of an email's HTML: no scripts, no plugins, no forms,
// nothing fetched but inline data, and the frame sandboxed on top; with
// images allowed, remote images (only) may load.
const bodyCSP = "default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:%s; " +
	"form-action 'none'; frame-ancestors 'self'; base-uri 'none'; sandbox allow-popups allow-popups-to-escape-sandbox"

// BodyHandler answers GET /emails/{emailId}/body: the email's HTML alone, for
// the email page's <iframe sandbox>. The CSP keeps scripts from running and
// remote images from loading (which would tell the sender the mail was read)
// until images=1. scheme=dark shows the email in the dark colour scheme,
// anything else in the light one, whatever the viewer's system prefers
// (forceScheme).
func (d *Dashboard) BodyHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	imgs := ""
	if r.URL.Query().Get("images") == "1" {
		imgs = " https: http:"
	}
	h := w.Header()
	h.Set("Content-Security-Policy", fmt.Sprintf(bodyCSP, imgs))
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	scheme := "light"
	if r.URL.Query().Get("scheme") == "dark" {
		scheme = "dark"
	}
	body := forceScheme(e.HTML, scheme)
	if body == "" {
		body = "<pre style=\"white-space:pre-wrap;font:14px/1.5 ui-monospace,monospace\">" + html.EscapeString(e.Text) + "</pre>"
	}
	// Links open outside the frame, in a new tab, never in it.
	_, err = w.Write([]byte("<!doctype html><meta charset=\"utf-8\"><base target=\"_blank\"><meta name=\"referrer\" content=\"no-referrer\">" + cidToNothing(body)))
	return err
}

var cidRE = regexp.MustCompile(`(?i)src\s*=\s*["']cid:[^"']*["']`)

// cidToNothing drops cid: image sources, which a browser cannot fetch; the
// parts are listed as attachments.
func cidToNothing(s string) string { return cidRE.ReplaceAllString(s, `src=""`) }

// DeleteEmailHandler answers POST /emails/{emailId}/delete (inbox.DeleteEmail).
func (d *Dashboard) DeleteEmailHandler(w http.ResponseWriter, r *http.Request) error {
	e, n, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	if n.OrgID != tenant.OrgFrom(r.Context()).ID {
		return forbidden("namespace_read_only", "This inbox is shared with your organisation for reading only.")
	}
	_, err = d.Inbox.DeleteEmail(r.Context(), tenant.PrincipalFrom(r.Context()), inbox.DeleteRequest{EmailID: e.ID})
	var pe *problem.Error
	if err != nil && !(errors.As(err, &pe) && pe.Kind == problem.NotFound) {
		return err // gone already (deleted in another tab) is what the user asked for
	}
	return redirect(w, r, "/inboxes/"+n.Name, "Email deleted.")
}

// ShareHandler answers POST /emails/{emailId}/share (inbox.ShareEmail): a
// share link valid for seven days (the API's default), shown on the email
// page.
func (d *Dashboard) ShareHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	sh, err := d.Inbox.ShareEmail(r.Context(), tenant.PrincipalFrom(r.Context()), inbox.ShareRequest{EmailID: e.ID})
	if err != nil {
		return err
	}
	d.setNote(w, r, note{Message: "Share link created.", Share: sh.URL, EmailID: e.ID})
	http.Redirect(w, r, "/emails/"+e.ID, http.StatusSeeOther)
	return nil
}

package tenant

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
)

// NamespaceParam resolves the {namespace} path parameter to a namespace the
// request's organisation may read: 404 otherwise, never revealing another's.
func (s *Service) NamespaceParam(r *http.Request) (Namespace, error) {
	name := chi.URLParam(r, "namespace")
	n, err := s.VisibleNamespace(r.Context(), OrgFrom(r.Context()).ID, name)
	if errors.Is(err, ErrNotFound) {
		return Namespace{}, httpx.NotFound("namespace " + quoteName(name))
	}
	return n, err
}

func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// TestKeyHandler answers GET /api/test: the key is valid (RequireKey checked it).
func (s *Service) TestKeyHandler(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
	return nil
}

type settingsJSON struct {
	RetentionTime   int  `json:"retention_time"`
	QuotaLimit      *int `json:"quota_limit"`
	CaptureRawEmail bool `json:"capture_raw_email"`
}

type namespaceJSON struct {
	ID                   string       `json:"id"`
	Namespace            string       `json:"namespace"`
	Shared               bool         `json:"shared"`
	SharedOrganisationID string       `json:"shared_organisation_id,omitempty"`
	Settings             settingsJSON `json:"settings"`
}

// namespaceView is the seed's Namespace as the organisation viewerID sees it.
// shared tells whether two organisations share the namespace, and
// shared_organisation_id names the other one: for the owner, the organisation it
// is shared with; for that organisation, the owner.
func namespaceView(n Namespace, viewerID string) namespaceJSON {
	v := namespaceJSON{ID: n.ID, Namespace: n.Name, Shared: n.SharedOrgID != "",
		Settings: settingsJSON{RetentionTime: n.RetentionTime, QuotaLimit: n.QuotaLimit, CaptureRawEmail: n.CaptureRawEmail}}
	if v.Shared {
		v.SharedOrganisationID = n.SharedOrgID
		if viewerID == n.SharedOrgID {
			v.SharedOrganisationID = n.OrgID
		}
	}
	return v
}

// ListNamespacesHandler answers GET /api/namespaces: the namespaces the key's
// organisation owns and those shared with it (shared: true), by name.
func (s *Service) ListNamespacesHandler(w http.ResponseWriter, r *http.Request) error {
	orgID := OrgFrom(r.Context()).ID
	ns, err := s.ListNamespaces(r.Context(), orgID)
	if err != nil {
		return err
	}
	data := make([]namespaceJSON, 0, len(ns))
	for _, n := range ns {
		data = append(data, namespaceView(n, orgID))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"total_count": len(data), "data": data})
	return nil
}

// UpsertSettingsHandler answers POST /api/namespace/{namespace}/settings: create the
// namespace or update its settings (SaveNamespaceFor); 201 either way (contract
// section 5).
func (s *Service) UpsertSettingsHandler(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		RetentionTime   *int            `json:"retention_time"`
		QuotaLimit      json.RawMessage `json:"quota_limit"`
		CaptureRawEmail *bool           `json:"capture_raw_email"`
	}
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return err
	}
	st := Settings{RetentionTime: body.RetentionTime, CaptureRawEmail: body.CaptureRawEmail}
	switch q := string(body.QuotaLimit); q {
	case "":
	case "null":
		st.ClearQuota = true
	default:
		var n int
		if err := json.Unmarshal(body.QuotaLimit, &n); err != nil {
			return httpx.Invalid("quota_limit", "must be an integer or null")
		}
		st.QuotaLimit = &n
	}
	n, err := s.SaveNamespaceFor(r.Context(), PrincipalFrom(r.Context()), NamespaceRequest{Name: chi.URLParam(r, "namespace"), Settings: st})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, namespaceView(n, OrgFrom(r.Context()).ID))
	return nil
}

// SMTPEndpoint is the public host and port of the SMTP listener.
type SMTPEndpoint func() (host string, port int)

// MailboxPorts are the public ports of the IMAP and POP3 listeners, 0 for one
// that is off.
type MailboxPorts func() (imap, pop3 int)

// SMTPSettingsHandler answers GET /api/smtp/{namespace}: where and how to submit
// mail for the namespace (username: the namespace name; password: its derived
// secret), and the IMAP and POP3 ports where the same credentials read it
// (imap_port, pop3_port: left out when that listener is off).
func (s *Service) SMTPSettingsHandler(endpoint SMTPEndpoint, mailbox MailboxPorts) httpx.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		n, err := s.NamespaceParam(r)
		if err != nil {
			return err
		}
		if n.OrgID != OrgFrom(r.Context()).ID {
			return httpx.NotFound("namespace " + quoteName(n.Name)) // a shared reader may not send as the owner
		}
		host, port := endpoint()
		data := map[string]any{"host": host, "port": port, "username": n.Name, "password": s.SMTPPassword(n)}
		if mailbox != nil {
			imapPort, pop3Port := mailbox()
			if imapPort != 0 {
				data["imap_port"] = imapPort
			}
			if pop3Port != 0 {
				data["pop3_port"] = pop3Port
			}
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": data})
		return nil
	}
}

package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Namespace is an inbox: mail to anything@<namespace>.<mail domain> lands in
// it.
type Namespace struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"` // the name, lower case
	Shared    bool   `json:"shared"`
	// SharedOrganisationID is the other organisation of a shared namespace:
	// for the owner, the one it is shared with; for that one, the owner.
	SharedOrganisationID string            `json:"shared_organisation_id,omitempty"`
	Settings             NamespaceSettings `json:"settings"`
}

// NamespaceSettings are a namespace's settings as the server holds them.
type NamespaceSettings struct {
	RetentionTime   int  `json:"retention_time"` // seconds an email is kept
	QuotaLimit      *int `json:"quota_limit"`    // most emails kept; nil: the server default (no limit)
	CaptureRawEmail bool `json:"capture_raw_email"`
}

// SettingsRequest creates a namespace or changes its settings. Every field is
// optional: nil keeps the current value (or the default, on creation:
// retention 86400 s, no quota, raw source kept).
type SettingsRequest struct {
	RetentionTime *int // seconds, 60 to the server's maximum
	QuotaLimit    *int // 1 to 1,000,000 emails
	// DefaultQuota sends "quota_limit": null, which sets the quota back to the
	// server default; QuotaLimit must then be nil.
	DefaultQuota    bool
	CaptureRawEmail *bool
}

// MarshalJSON writes the request body, leaving out what is not set.
func (r SettingsRequest) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if r.RetentionTime != nil {
		m["retention_time"] = *r.RetentionTime
	}
	if r.QuotaLimit != nil {
		m["quota_limit"] = *r.QuotaLimit
	} else if r.DefaultQuota {
		m["quota_limit"] = nil
	}
	if r.CaptureRawEmail != nil {
		m["capture_raw_email"] = *r.CaptureRawEmail
	}
	return json.Marshal(m)
}

// SMTPSettings is where and how to submit mail to a namespace over SMTP.
type SMTPSettings struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Username string `json:"username"` // the namespace name
	Password string `json:"password"` // the namespace's SMTP AUTH secret
}

// CheckKey checks the API key (GET /api/test): nil when the server accepts it.
func (c *Client) CheckKey(ctx context.Context) error {
	return c.do(ctx, request{method: http.MethodGet, path: "/api/test"}, nil)
}

// Namespaces lists the organisation's namespaces and those shared with it, by
// name (GET /api/namespaces).
func (c *Client) Namespaces(ctx context.Context) ([]Namespace, error) {
	var out struct {
		Data []Namespace `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/namespaces"}, &out)
	return out.Data, err
}

// SaveNamespace creates the namespace for the key's organisation, or changes
// the settings of one it owns (POST /api/namespace/{namespace}/settings). A
// name another organisation owns is an *Error with code "namespace_taken".
func (c *Client) SaveNamespace(ctx context.Context, name string, settings SettingsRequest) (Namespace, error) {
	var out Namespace
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/namespace/" + seg(name) + "/settings", body: settings}, &out)
	return out, err
}

// SMTPSettings returns the SMTP submission settings of a namespace the
// organisation owns (GET /api/smtp/{namespace}).
func (c *Client) SMTPSettings(ctx context.Context, namespace string) (SMTPSettings, error) {
	var out struct {
		Data SMTPSettings `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/smtp/" + seg(namespace)}, &out)
	return out.Data, err
}

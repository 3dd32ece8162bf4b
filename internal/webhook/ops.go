package webhook

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// The operations on an organisation's webhook endpoints: create, change,
// delete and rotate the secret of one. Each takes the principal acting and a
// typed request, and returns a typed result or a *problem.Error; the HTTP API
// and the admin command line (acting as the organisation) call them and only
// translate. An endpoint of another organisation is not found, never
// revealed.

// Input is the request of CreateEndpoint and the changes of UpdateEndpoint,
// as the API's body writes them: a nil field is not given.
type Input struct {
	URL         *string   `json:"url"`
	EventTypes  *[]string `json:"event_types"`
	Namespace   *string   `json:"namespace"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// UpdateRequest names the endpoint to change and the changes: the fields
// given change, the others stay.
type UpdateRequest struct {
	ID string
	Input
}

// EndpointRequest names one of the organisation's endpoints.
type EndpointRequest struct {
	ID string
}

// CreateEndpoint adds an endpoint to the principal's organisation (url
// required; every event type unless event_types narrows them) and returns
// it with its secret, the only time the secret is shown. An organisation at
// its limit of endpoints is forbidden (webhook_limit_reached).
func (s *Service) CreateEndpoint(ctx context.Context, p tenant.Principal, in Input) (Endpoint, error) {
	if p.Org.ID == "" {
		return Endpoint{}, problem.Errorf(problem.Unauthenticated, "unauthenticated", "no organisation to act for")
	}
	spec, err := s.check(ctx, p.Org.ID, in, true)
	if err != nil {
		return Endpoint{}, err
	}
	e, err := s.Create(ctx, p.Org.ID, spec)
	return e, problemOf(err)
}

// UpdateEndpoint changes one of the principal organisation's endpoints.
// Enabling a disabled endpoint clears its disabled_reason and its failure
// streak, and resumes its deliveries.
func (s *Service) UpdateEndpoint(ctx context.Context, p tenant.Principal, req UpdateRequest) (Endpoint, error) {
	e, err := s.ownEndpoint(ctx, p, req.ID)
	if err != nil {
		return Endpoint{}, err
	}
	spec, err := s.check(ctx, e.OrgID, req.Input, false)
	if err != nil {
		return Endpoint{}, err
	}
	e, err = s.Update(ctx, e.OrgID, e.ID, spec)
	return e, problemOf(err)
}

// DeleteEndpoint removes one of the principal organisation's endpoints, with
// its pending messages and its delivery log.
func (s *Service) DeleteEndpoint(ctx context.Context, p tenant.Principal, req EndpointRequest) error {
	e, err := s.ownEndpoint(ctx, p, req.ID)
	if err != nil {
		return err
	}
	return problemOf(s.Delete(ctx, e.OrgID, e.ID))
}

// RotateEndpointSecret gives one of the principal organisation's endpoints a
// new secret and returns the endpoint with it, shown this once; the secret
// it replaces goes on signing for RotationOverlap.
func (s *Service) RotateEndpointSecret(ctx context.Context, p tenant.Principal, req EndpointRequest) (Endpoint, error) {
	e, err := s.ownEndpoint(ctx, p, req.ID)
	if err != nil {
		return Endpoint{}, err
	}
	e, err = s.RotateSecret(ctx, e.OrgID, e.ID)
	return e, problemOf(err)
}

// ownEndpoint is the endpoint id of the principal's organisation.
func (s *Service) ownEndpoint(ctx context.Context, p tenant.Principal, id string) (Endpoint, error) {
	if p.Org.ID == "" {
		return Endpoint{}, problemOf(ErrNotFound) // Get would find any organisation's
	}
	e, err := s.Get(ctx, p.Org.ID, id)
	return e, problemOf(err)
}

// problemOf turns the package's errors into the operations' problems; any
// other error is returned as it is.
func problemOf(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return problem.NotFoundf("webhook endpoint")
	case errors.Is(err, ErrLimitReached):
		return problem.Errorf(problem.Forbidden, "webhook_limit_reached", "%s", err.Error())
	}
	return err
}

// check validates a request's fields into a Spec, naming every bad field;
// creating requires url. The namespace, when named, must be visible to the
// organisation.
func (s *Service) check(ctx context.Context, orgID string, in Input, creating bool) (Spec, error) {
	var f problem.Fields
	var spec Spec
	switch {
	case in.URL == nil && creating:
		f.Add("url", "is required")
	case in.URL != nil:
		u, err := s.checkURL(ctx, strings.TrimSpace(*in.URL))
		if err != nil {
			code := ""
			if egress.Refused(err) != nil {
				code = "webhook_url_private"
			}
			f.AddCode("url", code, err.Error())
		}
		spec.URL = &u
	}
	if in.EventTypes != nil {
		types, detail := checkTypes(*in.EventTypes)
		if detail != "" {
			f.Add("event_types", detail)
		}
		spec.EventTypes = types
	}
	if in.Namespace != nil {
		ns := strings.ToLower(strings.TrimSpace(*in.Namespace))
		if ns != "" && s.tenants != nil {
			if _, err := s.tenants.VisibleNamespace(ctx, orgID, ns); err != nil {
				if !errors.Is(err, tenant.ErrNotFound) {
					return Spec{}, err
				}
				f.Add("namespace", "is not a namespace of the organisation")
			}
		}
		spec.Namespace = &ns
	}
	if in.Description != nil {
		if len(*in.Description) > MaxDescriptionBytes {
			f.Add("description", "must be at most 500 bytes")
		}
		spec.Description = in.Description
	}
	spec.Enabled = in.Enabled
	if err := f.Err(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// checkURL returns the URL as stored, or what is wrong with it: it must be
// an absolute http or https URL without credentials or fragment, at most
// MaxURLBytes, and pass the outgoing-fetch rule (egress.Guard.CheckURL: unless
// private targets are allowed, its host must be public and resolve to public
// addresses only; an IPv4 address in an older spelling is stored as four
// decimal numbers). Every connection is checked again.
func (s *Service) checkURL(ctx context.Context, raw string) (string, error) {
	if raw == "" {
		return "", errors.New("is required")
	}
	if len(raw) > MaxURLBytes {
		return "", errors.New("must be at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", errors.New("must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", errors.New("must not carry a user name or password")
	}
	if u.Fragment != "" {
		return "", errors.New("must not have a fragment")
	}
	if err := s.guard.CheckURL(ctx, u); err != nil {
		return "", err
	}
	return u.String(), nil
}

func checkTypes(types []string) ([]string, string) {
	if len(types) == 0 {
		return nil, "must name at least one event type"
	}
	var out []string
	for _, t := range types {
		if !slices.Contains(EventTypes, t) {
			return nil, "must be among " + strings.Join(EventTypes, ", ") + ` (got "` + t + `")`
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, ""
}

package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// rulesBody is the body of PUT and of every answer: {"rules": [...]}.
type rulesBody struct {
	Rules []Rule `json:"rules"`
}

// SetRulesHandler answers PUT /api/namespace/{namespace}/chaos: it replaces
// the namespace's rules and answers 200 with them, {"data": {"rules": [...]}}.
func (s *Service) SetRulesHandler(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Rules *[]json.RawMessage `json:"rules"`
	}
	if err := httpx.DecodeJSON(r, &body); err != nil {
		return err
	}
	// The namespace is looked up first: an unknown one is 404 whatever the body.
	p := tenant.PrincipalFrom(r.Context())
	name := chi.URLParam(r, "namespace")
	if _, err := s.ownNamespace(r.Context(), p, name); err != nil {
		return err
	}
	if body.Rules == nil {
		return problem.Field("rules", "is required: a list of rules (an empty list clears them)")
	}
	rules, err := DecodeRules(*body.Rules)
	if err != nil {
		return err
	}
	list, err := s.SetRules(r.Context(), p, SetRequest{Namespace: name, Rules: rules})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": rulesBody{Rules: list.Rules}})
	return nil
}

// DecodeRules reads each element of a JSON rule list, so that a value of the
// wrong type is named by its place: rules[2].delay_ms must be a number.
func DecodeRules(raw []json.RawMessage) ([]Rule, error) {
	if len(raw) > MaxRules {
		return nil, problem.Fields{{Field: "rules", Code: "too_many_rules", Detail: fmt.Sprintf("must have at most %d rules", MaxRules)}}.Error()
	}
	rules := make([]Rule, len(raw))
	var fe problem.Fields
	for i, m := range raw {
		err := json.Unmarshal(m, &rules[i])
		var te *json.UnmarshalTypeError
		switch {
		case err == nil:
		case errors.As(err, &te) && te.Field != "":
			fe.Add(fmt.Sprintf("rules[%d].%s", i, te.Field), httpx.TypeDetail(te))
		default:
			fe.Add(fmt.Sprintf("rules[%d]", i), "must be an object")
		}
	}
	return rules, fe.Err()
}

// GetRulesHandler answers GET /api/namespace/{namespace}/chaos:
// {"data": {"rules": [...]}}, an empty list when the namespace has none.
func (s *Service) GetRulesHandler(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Rules(r.Context(), tenant.PrincipalFrom(r.Context()), NamespaceRequest{Namespace: chi.URLParam(r, "namespace")})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": rulesBody{Rules: list.Rules}})
	return nil
}

// ClearRulesHandler answers DELETE /api/namespace/{namespace}/chaos: 204.
func (s *Service) ClearRulesHandler(w http.ResponseWriter, r *http.Request) error {
	if err := s.ClearRules(r.Context(), tenant.PrincipalFrom(r.Context()), NamespaceRequest{Namespace: chi.URLParam(r, "namespace")}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

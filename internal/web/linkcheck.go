package web

import (
	"errors"
	"net/http"

	"github.com/catchbox/catchbox/internal/linkcheck"
	"github.com/catchbox/catchbox/internal/tenant"
)

// linkCheckView is an email's link check as the Links tab shows it: nil when
// none was started.
type linkCheckView struct {
	linkcheck.Result
	Broken int // links with an error
}

// linkCheck reads the email's link check for the user (linkcheck.Service.Get).
func (d *Dashboard) linkCheck(r *http.Request, emailID string) (*linkCheckView, error) {
	res, err := d.LinkCheck.Get(r.Context(), tenant.PrincipalFrom(r.Context()), emailID)
	if errors.Is(err, linkcheck.ErrNoCheck) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := &linkCheckView{Result: res}
	for _, l := range res.Links {
		if l.Error != "" {
			v.Broken++
		}
	}
	return v, nil
}

// RequestLinkCheckHandler answers POST /emails/{emailId}/link-check: a link
// check is started (linkcheck.Service.Request), then shown as it runs.
func (d *Dashboard) RequestLinkCheckHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	_, started, err := d.LinkCheck.Request(r.Context(), tenant.PrincipalFrom(r.Context()), e.ID)
	if err != nil {
		return err
	}
	msg := "Link check started: it takes up to 30 seconds."
	if !started {
		msg = "A link check of this email is already running."
	}
	return redirect(w, r, "/emails/"+e.ID+"?tab=links#link-check", msg)
}

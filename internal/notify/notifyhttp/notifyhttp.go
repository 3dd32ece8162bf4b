// Package notifyhttp answers HTTP searches that may wait, over notify's
// holds: notify decides when a held search has its answer, this package
// writes that answer. Listeners of other protocols (IMAP's IDLE) use notify
// alone.
package notifyhttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/notify"
)

// Answer answers a search request that may wait (wait=true, contract section
// 4). look returns the response body and whether it holds a match. Without
// hold, look runs once and its body is the 200. With hold, the request is held
// as notify.Until holds it: the first body with a match is the 200, and a hold
// that ends without one is answered 307 to the identical URL, so the client
// asks again. An error is returned for the caller's error handling, nothing
// written.
func Answer[T any](w http.ResponseWriter, r *http.Request, hold bool, n notify.Notifier, want notify.Want, p notify.Policy, look func(context.Context) (T, bool, error)) error {
	res, err := notify.Search(r.Context(), hold, n, want, p, look)
	if errors.Is(err, notify.ErrHoldEnded) {
		httpx.AskAgain(w, r)
		return nil
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, res)
	return nil
}

package web

import (
	"context"
	"net/http"
)

func contextWith(r *http.Request, d *Dashboard) context.Context {
	return context.WithValue(r.Context(), dashKey{}, d)
}

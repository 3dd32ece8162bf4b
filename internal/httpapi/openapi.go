package httpapi

import (
	_ "embed"
	"net/http"
	"regexp"
	"strconv"
)

// openAPIDocument is the OpenAPI 3.0 document of the API. It lives beside the
// router, and not only in docs/, because go:embed can only reach files of this
// package's directory; docs/openapi.yaml is a symbolic link to it, so there is
// one copy to edit. openapi_test.go checks it against real responses and against
// the registered routes, so it cannot drift from the code.
//
//go:embed openapi.yaml
var openAPIDocument []byte

// openAPIHandler answers GET /api/openapi.yaml with the embedded document. It
// needs no API key: the document holds no secrets, and tools fetch it before they
// have one.
func openAPIHandler(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/yaml; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.Write(openAPIDocument)
	return nil
}

// apiVersion is the revision of the API this server serves: the document's
// info.version, which rises with each entry of docs/api.md's Changes.
var apiVersion = string(regexp.MustCompile(`(?m)^info:\n(?:  .*\n)*?  version: (\S+)`).FindSubmatch(openAPIDocument)[1])

package web

import "testing"

// After sign-in the browser goes back only to a path of this site.
func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/inboxes/x?offset=20": "/inboxes/x?offset=20",
		"":                     "/",
		"//evil.example/x":     "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"javascript:alert(1)":  "/",
		"inboxes":              "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

package web

import "testing"

func TestForceScheme(t *testing.T) {
	for _, tc := range []struct{ in, scheme, want string }{
		{`<style>@media (prefers-color-scheme: dark) { a { color: red } }</style>`, "dark",
			`<style>@media (min-width: 0px) { a { color: red } }</style>`},
		{`<style>@media (prefers-color-scheme: dark) { a { color: red } }</style>`, "light",
			`<style>@media (max-width: -1px) { a { color: red } }</style>`},
		{`<style>@media screen and (PREFERS-COLOR-SCHEME:light){a{b:c}}</style>`, "light",
			`<style>@media screen and (min-width: 0px){a{b:c}}</style>`},
		{`<link rel="stylesheet" media="(prefers-color-scheme: dark)" href="x.css"><source media="(prefers-color-scheme: light)">`, "dark",
			`<link rel="stylesheet" media="(min-width: 0px)" href="x.css"><source media="(max-width: -1px)">`},
		{`<meta name="color-scheme" content="light dark"><meta name="supported-color-schemes" content="light dark">`, "dark",
			`<meta name="color-scheme" content="dark"><meta name="supported-color-schemes" content="dark">`},
		{`<style>:root { color-scheme: light dark; } p{color-scheme:light}</style><div style="color-scheme: dark light !important">`, "light",
			`<style>:root { color-scheme: light; } p{color-scheme:light}</style><div style="color-scheme: light !important">`},
		// Text that speaks of it is not CSS: left as it is.
		{`<p>Use (prefers-color-scheme: dark) and color-scheme: light dark.</p>`, "dark",
			`<p>Use (prefers-color-scheme: dark) and color-scheme: light dark.</p>`},
		{`<p>nothing to do</p>`, "dark", `<p>nothing to do</p>`},
	} {
		if got := forceScheme(tc.in, tc.scheme); got != tc.want {
			t.Errorf("forceScheme(%q, %s)\n got %q\nwant %q", tc.in, tc.scheme, got, tc.want)
		}
	}
}

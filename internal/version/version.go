// Package version is the version of this build of Catchbox, printed by
// catchbox version and answered by GET /api/version.
package version

import "runtime"

// Version is set at build time: go build -ldflags "-X
// github.com/catchbox/catchbox/internal/version.Version=v1.2.3" (make build
// sets the git description of the tree). A plain go build is "dev".
var Version = "dev"

// Info is the body of GET /api/version.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

// Get returns this build's version.
func Get() Info { return Info{Version: Version, GoVersion: runtime.Version()} }

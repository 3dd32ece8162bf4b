package config

import (
	"fmt"
	"os/exec"
	"time"
)

// Preview configures the screenshots of GET /api/emails/{emailId}/preview.png
// (internal/preview). Without a Chromium they answer 501.
type Preview struct {
	Chromium       string        `name:"chromium" env:"CATCHBOX_CHROMIUM" help:"Path (or name in PATH) of a Chromium for email preview screenshots, e.g. /usr/bin/chromium (default: none; previews answer 501)."`
	PreviewTimeout time.Duration `name:"preview-timeout" env:"CATCHBOX_PREVIEW_TIMEOUT" default:"20s" help:"Time limit of one preview screenshot, the browser's start included."`
	PreviewWorkers int           `name:"preview-workers" env:"CATCHBOX_PREVIEW_WORKERS" default:"2" help:"Preview screenshots one replica renders at once (each is a Chromium of its own)."`
}

// validate checks the preview settings and makes Chromium a path.
func (p *Preview) validate() error {
	if p.PreviewTimeout <= 0 {
		return invalid("must be positive", "preview-timeout")
	}
	if p.PreviewWorkers < 1 {
		return invalid("must be at least 1", "preview-workers")
	}
	if p.Chromium != "" {
		path, err := exec.LookPath(p.Chromium)
		if err != nil {
			return invalid(fmt.Sprintf("names no program that can be run (%q)", p.Chromium), "chromium")
		}
		p.Chromium = path
	}
	return nil
}

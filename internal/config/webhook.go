package config

import "time"

// Webhook configures deliveries to the organisations' webhook endpoints
// (internal/webhook).
type Webhook struct {
	WebhookMaxAge       time.Duration `name:"webhook-max-age" env:"CATCHBOX_WEBHOOK_MAX_AGE" default:"24h" help:"How long a webhook message is retried before it is dead."`
	WebhookBackoff      time.Duration `name:"webhook-backoff" env:"CATCHBOX_WEBHOOK_BACKOFF" default:"5s" help:"Delay before the first retry of a failed webhook delivery, doubled at each further one (with jitter)."`
	WebhookMaxBackoff   time.Duration `name:"webhook-max-backoff" env:"CATCHBOX_WEBHOOK_MAX_BACKOFF" default:"1h" help:"Longest delay between two attempts at a webhook delivery."`
	WebhookDisableAfter time.Duration `name:"webhook-disable-after" env:"CATCHBOX_WEBHOOK_DISABLE_AFTER" default:"120h" help:"A webhook endpoint whose deliveries have all failed for this long is disabled."`
	WebhookTimeout      time.Duration `name:"webhook-timeout" env:"CATCHBOX_WEBHOOK_TIMEOUT" default:"10s" help:"Time a webhook endpoint has to answer 2xx."`
	WebhookMaxEndpoints int           `name:"webhook-max-endpoints" env:"CATCHBOX_WEBHOOK_MAX_ENDPOINTS" default:"20" help:"Most webhook endpoints one organisation may have."`
	WebhookWorkers      int           `name:"webhook-workers" env:"CATCHBOX_WEBHOOK_WORKERS" default:"16" help:"Webhook endpoints one replica delivers to at once."`
}

func (w *Webhook) validate() error {
	if w.WebhookMaxAge < time.Second {
		return invalid("must be at least 1s", "webhook-max-age")
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"webhook-backoff", w.WebhookBackoff}, {"webhook-disable-after", w.WebhookDisableAfter}, {"webhook-timeout", w.WebhookTimeout}} {
		if d.d <= 0 {
			return invalid("must be positive", d.flag)
		}
	}
	if w.WebhookMaxBackoff < w.WebhookBackoff {
		return invalid("must be at least --webhook-backoff", "webhook-max-backoff")
	}
	if w.WebhookMaxEndpoints < 1 {
		return invalid("must be at least 1", "webhook-max-endpoints")
	}
	if w.WebhookWorkers < 1 {
		return invalid("must be at least 1", "webhook-workers")
	}
	return nil
}

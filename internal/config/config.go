// Package config holds every setting of catchbox serve: its flag, its environment
// variable (the names are binding, operators script against them) and its default.
//
// The struct is read by kong in cmd/catchbox; nothing else parses flags or env.
package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Store selects and locates the database. It is shared by serve and admin, so that
// the admin command line works against the same store as a running server.
type Store struct {
	DataDir     string `name:"data-dir" env:"CATCHBOX_DATA_DIR" default:"./data" help:"Data directory: the SQLite file and the generated secret key."`
	DatabaseURL string `name:"database-url" env:"CATCHBOX_DATABASE_URL" help:"sqlite:///path/file.db or postgres://... (default: SQLite in the data directory)."`
	SecretKey   string `name:"secret-key" env:"CATCHBOX_SECRET_KEY" help:"Key for signing links and encrypting secrets at rest (default: generated into the data directory, mode 0600). Set the same value on every replica."`
}

// DatabaseURLOrDefault is the configured URL, or SQLite in the data directory.
func (s Store) DatabaseURLOrDefault() string {
	if s.DatabaseURL != "" {
		return s.DatabaseURL
	}
	return "sqlite://" + filepath.Join(s.DataDir, "catchbox.db")
}

// Serve is the configuration of catchbox serve.
type Serve struct {
	Store `embed:""`

	HTTPAddr       string        `name:"http-addr" env:"CATCHBOX_HTTP_ADDR" default:"127.0.0.1:8025" help:"HTTP listen address."`
	SMTPAddr       string        `name:"smtp-addr" env:"CATCHBOX_SMTP_ADDR" default:"127.0.0.1:2525" help:"SMTP listen address(es), comma separated."`
	MailDomain     string        `name:"mail-domain" env:"CATCHBOX_MAIL_DOMAIN" default:"localhost" help:"Mail domain: mail to x@<namespace>.<mail-domain> is received."`
	PublicURL      string        `name:"public-url" env:"CATCHBOX_PUBLIC_URL" help:"Base URL used in download links (default: http:// + HTTP address)."`
	SMTPPublicHost string        `name:"smtp-public-host" env:"CATCHBOX_SMTP_PUBLIC_HOST" help:"Host returned by GET /api/smtp/{namespace} (default: host of the public URL)."`
	SMTPPublicPort int           `name:"smtp-public-port" env:"CATCHBOX_SMTP_PUBLIC_PORT" help:"Port returned by GET /api/smtp/{namespace} (default: port of the first SMTP address)."`
	TLSCert        string        `name:"tls-cert" env:"CATCHBOX_TLS_CERT" help:"PEM certificate; STARTTLS is offered only when set."`
	TLSKey         string        `name:"tls-key" env:"CATCHBOX_TLS_KEY" help:"PEM private key for --tls-cert."`
	SMTPRequireTLS bool          `name:"smtp-require-tls" env:"CATCHBOX_SMTP_REQUIRE_TLS" help:"Refuse AUTH before STARTTLS."`
	APIKey         string        `name:"api-key" env:"CATCHBOX_API_KEY" help:"On first start of an empty store: the API key of the default organisation (default: generated and printed once)."`
	WaitHold       time.Duration `name:"wait-hold" env:"CATCHBOX_WAIT_HOLD" default:"20s" help:"How long a wait=true request is held before its 307 redirect."`
	LogFormat      string        `name:"log-format" env:"CATCHBOX_LOG_FORMAT" default:"text" enum:"text,json" help:"Log format: text or json."`
	AccessLog      bool          `name:"access-log" env:"CATCHBOX_ACCESS_LOG" default:"true" negatable:"" help:"Log every HTTP request (method, route, status, duration, bytes, request id, key id); without it only 4xx and 5xx answers are logged."`
	Metrics        bool          `name:"metrics" env:"CATCHBOX_METRICS" default:"true" negatable:"" help:"Serve GET /metrics (Prometheus) and record what it reports."`

	SMTPMaxMessageBytes int64         `name:"smtp-max-message-bytes" env:"CATCHBOX_SMTP_MAX_MESSAGE_BYTES" default:"31457280" help:"Largest message accepted over SMTP, in bytes (SIZE extension)."`
	SMTPMaxRecipients   int           `name:"smtp-max-recipients" env:"CATCHBOX_SMTP_MAX_RECIPIENTS" default:"100" help:"Most RCPT TO per message."`
	SMTPMaxConnections  int           `name:"smtp-max-connections" env:"CATCHBOX_SMTP_MAX_CONNECTIONS" default:"500" help:"Most SMTP connections open at once; more are answered 421."`
	SMTPIdleTimeout     time.Duration `name:"smtp-idle-timeout" env:"CATCHBOX_SMTP_IDLE_TIMEOUT" default:"60s" help:"An SMTP connection idle this long is closed."`
	SMTPMaxCommands     int           `name:"smtp-max-commands" env:"CATCHBOX_SMTP_MAX_COMMANDS" default:"20000" help:"Most commands on one SMTP connection before it is closed (a message takes three or more)."`
	SMTPMaxConnsPerIP   int           `name:"smtp-max-connections-per-ip" env:"CATCHBOX_SMTP_MAX_CONNECTIONS_PER_IP" default:"100" help:"Most SMTP connections open at once from one client address (IPv6: one /64); more are answered 421."`
	SMTPAuthFailures    int           `name:"smtp-auth-failures" env:"CATCHBOX_SMTP_AUTH_FAILURES" default:"10" help:"Failed SMTP AUTH attempts one client address may make before AUTH from it is refused (421, and the connection closed)."`
	SMTPAuthLockout     time.Duration `name:"smtp-auth-lockout" env:"CATCHBOX_SMTP_AUTH_LOCKOUT" default:"1m" help:"Once an address has used up its failed SMTP AUTH attempts, it regains one attempt per this period."`

	IMAPAddr           string        `name:"imap-addr" env:"CATCHBOX_IMAP_ADDR" default:"127.0.0.1:1143" empty:"off" help:"IMAP listen address (empty: IMAP is off)."`
	IMAPSAddr          string        `name:"imaps-addr" env:"CATCHBOX_IMAPS_ADDR" help:"IMAP listen address with implicit TLS (needs --tls-cert; default: none)."`
	IMAPPublicPort     int           `name:"imap-public-port" env:"CATCHBOX_IMAP_PUBLIC_PORT" help:"IMAP port returned by GET /api/smtp/{namespace} as imap_port (default: port of the IMAP address)."`
	IMAPMaxConnections int           `name:"imap-max-connections" env:"CATCHBOX_IMAP_MAX_CONNECTIONS" default:"1000" help:"Most IMAP connections open at once; more are answered BYE. From one client address: --smtp-max-connections-per-ip."`
	IMAPIdleTimeout    time.Duration `name:"imap-idle-timeout" env:"CATCHBOX_IMAP_IDLE_TIMEOUT" default:"30m" help:"A logged-in IMAP client silent this long (IDLE included) is logged out."`
	POP3Addr           string        `name:"pop3-addr" env:"CATCHBOX_POP3_ADDR" default:"127.0.0.1:1110" empty:"off" help:"POP3 listen address (empty: POP3 is off)."`
	POP3SAddr          string        `name:"pop3s-addr" env:"CATCHBOX_POP3S_ADDR" help:"POP3 listen address with implicit TLS (needs --tls-cert; default: none)."`
	POP3PublicPort     int           `name:"pop3-public-port" env:"CATCHBOX_POP3_PUBLIC_PORT" help:"POP3 port returned by GET /api/smtp/{namespace} as pop3_port (default: port of the POP3 address)."`
	POP3MaxConnections int           `name:"pop3-max-connections" env:"CATCHBOX_POP3_MAX_CONNECTIONS" default:"500" help:"Most POP3 connections open at once; more are refused. From one client address: --smtp-max-connections-per-ip."`
	POP3IdleTimeout    time.Duration `name:"pop3-idle-timeout" env:"CATCHBOX_POP3_IDLE_TIMEOUT" default:"10m" help:"A logged-in POP3 client silent this long is logged out."`

	RateLimitKey      float64 `name:"rate-limit-key" env:"CATCHBOX_RATE_LIMIT_KEY" default:"1000" help:"HTTP requests per second one API key may make, sustained (0: no limit); more are answered 429."`
	RateLimitKeyBurst int     `name:"rate-limit-key-burst" env:"CATCHBOX_RATE_LIMIT_KEY_BURST" default:"2000" help:"HTTP requests one API key may make at once, above its rate."`
	RateLimitIP       float64 `name:"rate-limit-ip" env:"CATCHBOX_RATE_LIMIT_IP" default:"1000" help:"HTTP requests per second without an API key (downloads, webhook, health) one client address may make (0: no limit)."`
	RateLimitIPBurst  int     `name:"rate-limit-ip-burst" env:"CATCHBOX_RATE_LIMIT_IP_BURST" default:"2000" help:"HTTP requests without an API key one client address may make at once, above its rate."`
	AuthFailureLimit  float64 `name:"auth-failure-limit" env:"CATCHBOX_AUTH_FAILURE_LIMIT" default:"1" help:"Failed API-key attempts per second one client address may make, sustained (0: no limit); past them every keyed request from it is answered 429."`
	AuthFailureBurst  int     `name:"auth-failure-burst" env:"CATCHBOX_AUTH_FAILURE_BURST" default:"20" help:"Failed API-key attempts one client address may make at once, above its rate."`
	TrustedProxies    string  `name:"trusted-proxies" env:"CATCHBOX_TRUSTED_PROXIES" help:"Addresses or CIDR ranges of reverse proxies, comma separated, whose X-Forwarded-For names the client address of the request limits (default: none; the connection's address is the client's)."`

	RetentionMax      time.Duration `name:"retention-max" env:"CATCHBOX_RETENTION_MAX" default:"720h" help:"Largest retention_time a namespace may set."`
	SearchMemoryBytes int64         `name:"search-memory-bytes" env:"CATCHBOX_SEARCH_MEMORY_BYTES" default:"134217728" help:"SQLite: memory for the columns substring searches read, kept per namespace searched (0: search in SQLite only)."`

	MemoryLimit string `name:"memory-limit" env:"CATCHBOX_MEMORY_LIMIT" help:"Memory budget of the whole process, in bytes or with a KiB, MiB or GiB suffix (e.g. 256MiB; default: none). Sets Go's soft memory limit and sizes SQLite's caches and the search copies under it; at least 32MiB."`

	ReaperInterval time.Duration `name:"reaper-interval" env:"CATCHBOX_REAPER_INTERVAL" default:"30s" help:"How often expired emails are deleted."`

	TwilioAuthToken string        `name:"twilio-auth-token" env:"CATCHBOX_TWILIO_AUTH_TOKEN" help:"Twilio account auth token: verifies X-Twilio-Signature on POST /webhooks/twilio/sms (the webhook is off without it)."`
	SMSRetention    time.Duration `name:"sms-retention" env:"CATCHBOX_SMS_RETENTION" default:"168h" help:"How long SMS messages are kept (0: the default, 7 days)."`

	RelayURL           string        `name:"relay-url" env:"CATCHBOX_RELAY_URL" help:"Outbound relay, smtp://user:pass@host:port?tls=starttls|tls|none (default: none; external delivery fails with a clear failure_reason)."`
	OutboundContentTTL time.Duration `name:"outbound-content-ttl" env:"CATCHBOX_OUTBOUND_CONTENT_TTL" default:"168h" help:"How long the bytes of outbound attachments and built messages are kept; afterwards attachment content is 410, metadata stays."`
	OutboundMaxAge     time.Duration `name:"outbound-max-age" env:"CATCHBOX_OUTBOUND_MAX_AGE" default:"24h" help:"How long after its creation an outbound message is retried for a deferred (4xx) recipient before the recipient is expired."`
	Deliverability     `embed:""`
	Webhook            `embed:""`
	Mode               `embed:""`
	Preview            `embed:""`
}

// Deliverability configures deliverability reports and spam scores
// (internal/deliverability).
type Deliverability struct {
	DNSServer          string        `name:"dns-server" env:"CATCHBOX_DNS_SERVER" help:"DNS server every deliverability lookup asks, host:port (default: the nameservers of /etc/resolv.conf)."`
	DNSTimeout         time.Duration `name:"dns-timeout" env:"CATCHBOX_DNS_TIMEOUT" default:"2s" help:"Time limit of one DNS query of a deliverability report."`
	SpamdAddr          string        `name:"spamd-addr" env:"CATCHBOX_SPAMD_ADDR" help:"SpamAssassin spamd address, host:port: enables spam_score on received emails and the report's spamassassin section."`
	SpamdTimeout       time.Duration `name:"spamd-timeout" env:"CATCHBOX_SPAMD_TIMEOUT" default:"30s" help:"Time limit of one spamd scan."`
	SpamdWorkers       int           `name:"spamd-workers" env:"CATCHBOX_SPAMD_WORKERS" default:"4" help:"Emails one replica scores with spamd at once."`
	DNSBLIPZones       string        `name:"dnsbl-ip-zones" env:"CATCHBOX_DNSBL_IP_ZONES" default:"zen.spamhaus.org,bl.spamcop.net" help:"DNS blocklists asked about the client IP, comma separated; none to ask none."`
	DNSBLDomainZones   string        `name:"dnsbl-domain-zones" env:"CATCHBOX_DNSBL_DOMAIN_ZONES" default:"dbl.spamhaus.org" help:"DNS blocklists asked about the From and link domains, comma separated; none to ask none."`
	ReportTimeout      time.Duration `name:"report-timeout" env:"CATCHBOX_REPORT_TIMEOUT" default:"30s" help:"Time limit of one deliverability report."`
	ReportCheckTimeout time.Duration `name:"report-check-timeout" env:"CATCHBOX_REPORT_CHECK_TIMEOUT" default:"20s" help:"Time limit of each check of a deliverability report."`
	ReportWorkers      int           `name:"report-workers" env:"CATCHBOX_REPORT_WORKERS" default:"4" help:"Deliverability reports one replica makes at once."`
}

// Zones splits a comma separated list of blocklist zones; "none" is none.
func Zones(list string) []string {
	var out []string
	for _, z := range strings.Split(list, ",") {
		z = strings.ToLower(strings.Trim(strings.TrimSpace(z), "."))
		if z != "" && z != "none" {
			out = append(out, z)
		}
	}
	return out
}

// validate checks the deliverability settings.
func (d *Deliverability) validate() error {
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"dns-timeout", d.DNSTimeout}, {"spamd-timeout", d.SpamdTimeout}, {"report-timeout", d.ReportTimeout}, {"report-check-timeout", d.ReportCheckTimeout}} {
		if t.d <= 0 {
			return invalid("must be positive", t.flag)
		}
	}
	if d.SpamdWorkers < 1 {
		return invalid("must be at least 1", "spamd-workers")
	}
	if d.ReportWorkers < 1 {
		return invalid("must be at least 1", "report-workers")
	}
	if d.DNSServer != "" {
		if _, _, err := net.SplitHostPort(d.DNSServer); err != nil {
			d.DNSServer = net.JoinHostPort(d.DNSServer, "53")
		}
	}
	if d.SpamdAddr != "" {
		if _, _, err := net.SplitHostPort(d.SpamdAddr); err != nil {
			return invalid(fmt.Sprintf("must be host:port, not %q", d.SpamdAddr), "spamd-addr")
		}
	}
	return nil
}

// Validate checks values kong cannot, and fills derived defaults. Its errors
// name each setting by its flag (--wait-hold); the command line names it as
// the user gave it, flag or environment variable.
func (c *Serve) Validate() error {
	if err := checkEmpty(reflect.ValueOf(c).Elem()); err != nil {
		return err
	}
	if c.WaitHold <= 0 {
		return invalid("must be positive", "wait-hold")
	}
	if c.SMTPMaxMessageBytes < 1024 {
		return invalid("must be at least 1024", "smtp-max-message-bytes")
	}
	for _, l := range []struct {
		flag     string
		n, least int
	}{
		{"smtp-max-recipients", c.SMTPMaxRecipients, 1}, {"smtp-max-connections", c.SMTPMaxConnections, 1},
		{"smtp-max-commands", c.SMTPMaxCommands, 10}, {"smtp-max-connections-per-ip", c.SMTPMaxConnsPerIP, 1},
	} {
		if l.n < l.least {
			return invalid(fmt.Sprintf("must be at least %d", l.least), l.flag)
		}
	}
	if c.SMTPIdleTimeout <= 0 {
		return invalid("must be positive", "smtp-idle-timeout")
	}
	if err := c.validateMailbox(); err != nil {
		return err
	}
	if err := c.validateRateLimits(); err != nil {
		return err
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return invalid("must be set together", "tls-cert", "tls-key")
	}
	if c.SearchMemoryBytes < 0 {
		return invalid("must not be negative", "search-memory-bytes")
	}
	if _, err := ParseBytes(c.MemoryLimit); err != nil {
		return invalid(err.Error(), "memory-limit")
	}
	if n, _ := ParseBytes(c.MemoryLimit); n != 0 && n < MinMemoryLimit {
		return invalid("must be at least 32MiB (the server itself takes about 20 MiB)", "memory-limit")
	}
	if c.RetentionMax < time.Minute {
		return invalid("must be at least 60s", "retention-max")
	}
	if c.ReaperInterval <= 0 {
		return invalid("must be positive", "reaper-interval")
	}
	if c.SMSRetention < 0 {
		return invalid("must not be negative", "sms-retention")
	}
	if c.OutboundContentTTL < time.Minute {
		return invalid("must be at least 1m", "outbound-content-ttl")
	}
	if c.OutboundMaxAge < time.Minute {
		return invalid("must be at least 1m", "outbound-max-age")
	}
	if _, err := c.Relay(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return invalid(fmt.Sprintf("must be host:port (127.0.0.1:8025), not %q", c.HTTPAddr), "http-addr")
	}
	if len(c.SMTPAddrs()) == 0 {
		return invalid("must name at least one address", "smtp-addr")
	}
	for _, a := range c.SMTPAddrs() {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return invalid(fmt.Sprintf("must be host:port addresses, comma separated (127.0.0.1:2525), not %q", a), "smtp-addr")
		}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid(fmt.Sprintf("must be an http(s) URL, not %q", c.PublicURL), "public-url")
		}
	}
	c.MailDomain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(c.MailDomain), "."))
	if !hostName(c.MailDomain) {
		return invalid(fmt.Sprintf("must be a domain name such as localhost or mail.example.com, not %q", c.MailDomain), "mail-domain")
	}
	if err := c.Mode.validate(); err != nil {
		return err
	}
	if err := c.Webhook.validate(); err != nil {
		return err
	}
	if err := c.Preview.validate(); err != nil {
		return err
	}
	return c.Deliverability.validate()
}

// SettingError is a setting whose value is refused. Its text names each
// setting by its flag (--wait-hold); cmd/catchbox names it as the user gave it
// instead, the environment variable when the value came from there.
type SettingError struct {
	Flags  []string // without dashes
	Reason string
}

func (e *SettingError) Error() string {
	names := make([]string, len(e.Flags))
	for i, f := range e.Flags {
		names[i] = "--" + f
	}
	return strings.Join(names, " and ") + " " + e.Reason
}

// invalid is a SettingError: reason is what is wrong with the settings flags.
func invalid(reason string, flags ...string) error {
	return &SettingError{Flags: flags, Reason: reason}
}

// checkEmpty refuses an empty value of every string setting that has a
// default: an empty CATCHBOX_MAIL_DOMAIN is a mistake, not a wish for no
// domain (unset the variable to get the default). A setting tagged
// empty:"off" is exempt: its empty value turns something off (the IMAP and
// POP3 listeners). Embedded structs are checked too.
func checkEmpty(v reflect.Value) error {
	for i := 0; i < v.NumField(); i++ {
		f, field := v.Field(i), v.Type().Field(i)
		if field.Anonymous && f.Kind() == reflect.Struct {
			if err := checkEmpty(f); err != nil {
				return err
			}
			continue
		}
		def, ok := field.Tag.Lookup("default")
		if !ok || def == "" || f.Kind() != reflect.String || strings.TrimSpace(f.String()) != "" || field.Tag.Get("empty") == "off" {
			continue
		}
		return invalid(fmt.Sprintf("is empty: give a value, or leave it unset for the default (%s)", def), field.Tag.Get("name"))
	}
	return nil
}

// validateMailbox checks the IMAP and POP3 settings: an implicit TLS address
// needs a certificate, limits are positive.
func (c *Serve) validateMailbox() error {
	if c.IMAPMaxConnections < 1 || c.POP3MaxConnections < 1 {
		return invalid("must be at least 1", "imap-max-connections", "pop3-max-connections")
	}
	if c.IMAPIdleTimeout <= 0 || c.POP3IdleTimeout <= 0 {
		return invalid("must be positive", "imap-idle-timeout", "pop3-idle-timeout")
	}
	if (c.IMAPSAddr != "" || c.POP3SAddr != "") && c.TLSCert == "" {
		return invalid("need --tls-cert and --tls-key", "imaps-addr", "pop3s-addr")
	}
	for _, p := range []int{c.IMAPPublicPort, c.POP3PublicPort} {
		if p < 0 || p > 65535 {
			return invalid("must be port numbers", "imap-public-port", "pop3-public-port")
		}
	}
	return nil
}

// CheckStore checks the store settings of a command that opens the store
// without serving (admin).
func (s *Store) CheckStore() error {
	return checkEmpty(reflect.ValueOf(s).Elem())
}

// hostName reports whether d is a domain name: dot-separated labels of 1 to 63
// letters, digits and hyphens, not starting or ending with a hyphen, at most
// 253 octets (RFC 1035 section 2.3.4).
func hostName(d string) bool {
	if d == "" || len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// MailboxPublicPorts are the IMAP and POP3 ports GET /api/smtp/{namespace}
// reports: the configured public port, else the port of the listen address; 0
// for a listener that is off.
func (c *Serve) MailboxPublicPorts() (imap, pop3 int) {
	port := func(public int, addr string) int {
		if addr == "" {
			return 0
		}
		if public != 0 {
			return public
		}
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(p)
		return n
	}
	return port(c.IMAPPublicPort, c.IMAPAddr), port(c.POP3PublicPort, c.POP3Addr)
}

// MinMemoryLimit is the smallest CATCHBOX_MEMORY_LIMIT: an idle server holds
// about 20 MiB.
const MinMemoryLimit = 32 << 20

// MemoryLimitBytes is MemoryLimit in bytes, 0 when none is set. Validate has
// checked it.
func (c *Serve) MemoryLimitBytes() int64 {
	n, _ := ParseBytes(c.MemoryLimit)
	return n
}

// ParseBytes reads a size: a whole number of bytes, or one followed by KiB,
// MiB or GiB (also KB, MB, GB, K, M, G, all powers of 1024). "" is 0.
func ParseBytes(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	num := strings.TrimRightFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToLower(strings.TrimSpace(v[len(num):]))
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20, "g": 30, "gb": 30, "gib": 30}
	s, ok := shift[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n < 0 || n > math.MaxInt64>>s {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB or GiB)", v)
	}
	return n << s, nil
}

// validateRateLimits checks the request and AUTH limits: a rate is a finite
// number, 0 or more (0 turns the limit off), a burst at least 1, and every
// trusted proxy an address or a CIDR range.
func (c *Serve) validateRateLimits() error {
	for _, r := range []struct {
		name, burstName string
		rate            float64
		burst           int
	}{
		{"rate-limit-key", "rate-limit-key-burst", c.RateLimitKey, c.RateLimitKeyBurst},
		{"rate-limit-ip", "rate-limit-ip-burst", c.RateLimitIP, c.RateLimitIPBurst},
		{"auth-failure-limit", "auth-failure-burst", c.AuthFailureLimit, c.AuthFailureBurst},
	} {
		if r.rate < 0 || math.IsNaN(r.rate) || math.IsInf(r.rate, 0) {
			return invalid("must be a number of requests per second, 0 or more", r.name)
		}
		if r.burst < 1 {
			return invalid("must be at least 1", r.burstName)
		}
	}
	if c.SMTPAuthFailures < 1 {
		return invalid("must be at least 1", "smtp-auth-failures")
	}
	if c.SMTPAuthLockout <= 0 {
		return invalid("must be positive", "smtp-auth-lockout")
	}
	if _, err := c.TrustedProxyPrefixes(); err != nil {
		return err
	}
	return nil
}

// TrustedProxyPrefixes parses TrustedProxies: each entry an address (a range
// of one) or a CIDR range.
func (c *Serve) TrustedProxyPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(c.TrustedProxies, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, invalid(fmt.Sprintf("names %q, neither an address nor a CIDR range", s), "trusted-proxies")
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// SMTPAddrs splits the comma separated SMTP listen addresses.
func (c *Serve) SMTPAddrs() []string {
	var out []string
	for _, a := range strings.Split(c.SMTPAddr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// PublicBaseURL is the base for links handed to clients, without a trailing
// slash: the configured public URL. Without one, the HTTP listen address,
// except that a listener on all interfaces (0.0.0.0, [::], :port) names
// localhost: an unspecified address is no place a client can reach, and a
// server that listens there should be given CATCHBOX_PUBLIC_URL (Serve warns).
func (c *Serve) PublicBaseURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	if host, port, err := net.SplitHostPort(c.HTTPAddr); err == nil && AllInterfaces(host) {
		return "http://" + net.JoinHostPort("localhost", port)
	}
	return "http://" + c.HTTPAddr
}

// AllInterfaces reports whether a listen host is every interface's: empty,
// 0.0.0.0 or ::.
func AllInterfaces(host string) bool {
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

// SMTPPublicEndpoint is the host and port GET /api/smtp/{namespace} reports.
func (c *Serve) SMTPPublicEndpoint() (string, int) {
	host := c.SMTPPublicHost
	if host == "" {
		if u, err := url.Parse(c.PublicBaseURL()); err == nil {
			host = u.Hostname()
		}
	}
	port := c.SMTPPublicPort
	if port == 0 {
		if addrs := c.SMTPAddrs(); len(addrs) > 0 {
			if _, p, err := net.SplitHostPort(addrs[0]); err == nil {
				port, _ = strconv.Atoi(p)
			}
		}
	}
	return host, port
}

// Defaults returns the settings of catchbox serve with no flag or environment
// variable set: the values of the default tags kong reads. A service built
// without a command line (the tests) starts from them, so it is the service an
// operator gets.
func Defaults() Serve {
	var s Serve
	setDefaults(reflect.ValueOf(&s).Elem())
	return s
}

// setDefaults fills the fields of the struct v from their default tags; embedded
// structs are filled too.
func setDefaults(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		f, field := v.Field(i), v.Type().Field(i)
		if field.Anonymous && f.Kind() == reflect.Struct {
			setDefaults(f)
			continue
		}
		def, ok := field.Tag.Lookup("default")
		if !ok {
			continue
		}
		var err error
		switch {
		case f.Type() == reflect.TypeOf(time.Duration(0)):
			var d time.Duration
			d, err = time.ParseDuration(def)
			f.SetInt(int64(d))
		case f.Kind() == reflect.String:
			f.SetString(def)
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			var n int64
			n, err = strconv.ParseInt(def, 10, 64)
			f.SetInt(n)
		case f.Kind() == reflect.Float64:
			var x float64
			x, err = strconv.ParseFloat(def, 64)
			f.SetFloat(x)
		case f.Kind() == reflect.Bool:
			var b bool
			b, err = strconv.ParseBool(def)
			f.SetBool(b)
		default:
			err = fmt.Errorf("unsupported type %s", f.Type())
		}
		if err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", field.Name, err))
		}
	}
}

package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The IMAP and POP3 listeners (internal/imapd, internal/pop3d). protocol is
// "imap" or "pop3"; command is a command name from the protocol's fixed list;
// results are fixed words.
var (
	mailboxConnections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_mailbox_connections_total",
		Help: "IMAP and POP3 connections, by protocol and result: accepted, or busy (a connection limit was reached).",
	}, []string{"protocol", "result"})
	mailboxOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "catchbox_mailbox_sessions",
		Help: "IMAP and POP3 sessions open now, by protocol.",
	}, []string{"protocol"})
	mailboxCommands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_mailbox_commands_total",
		Help: "IMAP and POP3 commands handled, by protocol, command and result (ok, no, bad, error: -ERR on POP3 is no).",
	}, []string{"protocol", "command", "result"})
	mailboxCommandTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catchbox_mailbox_command_seconds",
		Help:    "Time to handle an IMAP or POP3 command, by protocol and command (writing the answer included).",
		Buckets: latencyBuckets,
	}, []string{"protocol", "command"})
	mailboxThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "catchbox_mailbox_commands_delayed_total",
		Help: "IMAP and POP3 commands delayed because their connection was over its command rate, by protocol.",
	}, []string{"protocol"})
	imapIdle = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "catchbox_imap_idle_clients",
		Help: "IMAP clients in IDLE now.",
	})
	mailboxSync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "catchbox_imap_mailbox_sync_seconds",
		Help:    "Time to bring a namespace's IMAP mailbox up to date after it changed (UIDs given, changes read).",
		Buckets: latencyBuckets,
	})
)

func init() {
	Registry.MustRegister(mailboxConnections, mailboxOpen, mailboxCommands, mailboxCommandTime,
		mailboxThrottled, imapIdle, mailboxSync)
}

// MailboxConnection records a connection: "accepted" or "busy".
func MailboxConnection(protocol, result string) {
	if on.Load() {
		mailboxConnections.WithLabelValues(protocol, result).Inc()
	}
}

// MailboxOpen adds delta to the sessions open.
func MailboxOpen(protocol string, delta int) {
	if on.Load() {
		mailboxOpen.WithLabelValues(protocol).Add(float64(delta))
	}
}

// MailboxCommand records one handled command.
func MailboxCommand(protocol, command, result string, d time.Duration) {
	if on.Load() {
		mailboxCommands.WithLabelValues(protocol, command, result).Inc()
		mailboxCommandTime.WithLabelValues(protocol, command).Observe(d.Seconds())
	}
}

// MailboxThrottled records a command delayed by its connection's rate.
func MailboxThrottled(protocol string) {
	if on.Load() {
		mailboxThrottled.WithLabelValues(protocol).Inc()
	}
}

// MailboxIdle adds delta to the IMAP clients in IDLE.
func MailboxIdle(delta int) {
	if on.Load() {
		imapIdle.Add(float64(delta))
	}
}

// MailboxSync records one update of an IMAP mailbox that found a change.
func MailboxSync(d time.Duration) {
	if on.Load() {
		mailboxSync.Observe(d.Seconds())
	}
}

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// Reading mail the way mail clients do: IMAP with IDLE, and bulk reads over
// IMAP and POP3. pop3-fetch speaks only RFC 1939, so it runs against Mailpit's
// POP3 as it runs against Catchbox's.

// idleReport is the JSON form of the imap-idle subcommand's result.
type idleReport struct {
	IMAP    string  `json:"imap"`
	SMTP    string  `json:"smtp"`
	Clients int     `json:"clients"`
	Rounds  int     `json:"rounds"`
	Missed  int     `json:"missed"` // clients not told within the round's timeout
	Early   int     `json:"told_before_250"`
	Latency Latency `json:"latency"` // over every client of every round
	// Last is the latency of the last client told in each round: when the
	// whole fan-out is done.
	Last Latency `json:"last_client"`
}

// runIMAPIdle opens N IMAP connections that select INBOX and IDLE, then sends
// one message at a time over SMTP and measures, for every idling client, the
// time from the sender's 250 to the client's EXISTS.
func runIMAPIdle(args []string, stdout io.Writer) error {
	fs := newFlagSet("imap-idle")
	imapAddr := fs.String("imap", "127.0.0.1:1143", "IMAP host:port")
	smtpAddr := fs.String("smtp", "127.0.0.1:2525", "SMTP host:port")
	user := fs.String("user", "default", "IMAP user: the namespace")
	pass := fs.String("pass", "", "IMAP password: the namespace's SMTP password")
	domain := fs.String("mail-domain", "localhost", "mail domain: messages go to idle-N@<user>.<mail-domain>")
	clients := fs.Int("clients", 1, "idling IMAP connections (1 to 5000)")
	rounds := fs.Int("rounds", 200, "messages sent, one at a time (1 to 10000)")
	roundTimeout := fs.Duration("round-timeout", 30*time.Second, "give up on a round's clients after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *clients < 1 || *clients > 5000 || *rounds < 1 || *rounds > 10000 {
		return errors.New("--clients must be 1 to 5000 and --rounds 1 to 10000")
	}
	exists := make(chan time.Time, *clients**rounds+16)
	var conns []*imapclient.Client
	var idles []*imapclient.IdleCommand
	defer func() {
		for i, c := range conns {
			if i < len(idles) {
				idles[i].Close()
			}
			c.Close()
		}
	}()
	for i := 0; i < *clients; i++ {
		c, err := imapclient.DialInsecure(*imapAddr, &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Mailbox: func(d *imapclient.UnilateralDataMailbox) {
				if d.NumMessages != nil {
					exists <- time.Now()
				}
			},
		}})
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		conns = append(conns, c)
		if err := c.Login(*user, *pass).Wait(); err != nil {
			return fmt.Errorf("client %d: login: %w", i, err)
		}
		if _, err := c.Select("INBOX", nil).Wait(); err != nil {
			return fmt.Errorf("client %d: select: %w", i, err)
		}
		idle, err := c.Idle()
		if err != nil {
			return fmt.Errorf("client %d: idle: %w", i, err)
		}
		idles = append(idles, idle)
	}
	// Every client has written IDLE; give the server a moment to have read
	// them all before the first message.
	time.Sleep(200 * time.Millisecond)

	rep := idleReport{IMAP: *imapAddr, SMTP: *smtpAddr, Clients: *clients, Rounds: *rounds}
	s := &sender{addr: *smtpAddr}
	defer s.close()
	run := newRunID()
	var all, last []time.Duration
	for r := 0; r < *rounds; r++ {
		to := fmt.Sprintf("idle-%d@%s.%s", r, *user, *domain)
		msg, err := buildMessage(messageSpec{From: "bench@example.org", To: to, Subject: fmt.Sprintf("bench-idle-%s-%06d", run, r), Size: sizeSmall, Seq: r})
		if err != nil {
			return err
		}
		if _, err := s.send("bench@example.org", []string{to}, msg); err != nil {
			return fmt.Errorf("round %d: send: %w", r, err)
		}
		acked := time.Now()
		deadline := time.NewTimer(*roundTimeout)
		var slowest time.Duration
		got := 0
		for got < *clients {
			select {
			case at := <-exists:
				d := at.Sub(acked)
				if d < 0 {
					d = 0
					rep.Early++
				}
				all = append(all, d)
				slowest = max(slowest, d)
				got++
			case <-deadline.C:
				rep.Missed += *clients - got
				got = *clients
			}
		}
		deadline.Stop()
		last = append(last, slowest)
	}
	rep.Latency, rep.Last = summarize(all), summarize(last)
	line := fmt.Sprintf("imap-idle imap=%s clients=%d rounds=%d missed=%d told_before_250=%d all %s\n  last client of each round %s",
		rep.IMAP, rep.Clients, rep.Rounds, rep.Missed, rep.Early, rep.Latency, rep.Last)
	return report(stdout, *asJSON, rep, line)
}

// fetchReport is the JSON form of the imap-fetch and pop3-fetch results.
type fetchReport struct {
	Protocol string  `json:"protocol"`
	Addr     string  `json:"addr"`
	Messages int     `json:"messages"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	// ServerCPUSeconds is the user and system time the server process
	// (--pid) used over the run, from /proc/PID/stat.
	ServerCPUSeconds float64 `json:"server_cpu_seconds,omitempty"`
}

func (r fetchReport) String() string {
	s := fmt.Sprintf("%s-fetch addr=%s messages=%d bytes=%d time=%.3fs (%.0f messages/s)",
		r.Protocol, r.Addr, r.Messages, r.Bytes, r.Seconds, float64(r.Messages)/r.Seconds)
	if r.ServerCPUSeconds > 0 {
		s += fmt.Sprintf(" server_cpu=%.3fs", r.ServerCPUSeconds)
	}
	return s
}

// runIMAPFetch logs in, selects INBOX and fetches every message's UID,
// FLAGS, RFC822.SIZE and BODY.PEEK[] in one UID FETCH, as a client syncing a
// mailbox does.
func runIMAPFetch(args []string, stdout io.Writer) error {
	fs := newFlagSet("imap-fetch")
	addr := fs.String("imap", "127.0.0.1:1143", "IMAP host:port")
	user := fs.String("user", "default", "IMAP user: the namespace")
	pass := fs.String("pass", "", "IMAP password: the namespace's SMTP password")
	pid := fs.Int("pid", 0, "server process id, to report its CPU time over the run (0: not reported)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rep := fetchReport{Protocol: "imap", Addr: *addr}
	cpu0, err := cpuTime(*pid)
	if err != nil {
		return err
	}
	start := time.Now()
	c, err := imapclient.DialInsecure(*addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Login(*user, *pass).Wait(); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		return fmt.Errorf("select: %w", err)
	}
	body := &imap.FetchItemBodySection{Peek: true}
	cmd := c.Fetch(imap.UIDSet{{Start: 1, Stop: 0}}, &imap.FetchOptions{UID: true, Flags: true, RFC822Size: true, BodySection: []*imap.FetchItemBodySection{body}})
	for {
		msg := cmd.Next()
		if msg == nil {
			break
		}
		buf, err := msg.Collect()
		if err != nil {
			return err
		}
		rep.Messages++
		rep.Bytes += int64(len(buf.FindBodySection(body)))
	}
	if err := cmd.Close(); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	c.Logout().Wait()
	rep.Seconds = time.Since(start).Seconds()
	if rep.ServerCPUSeconds, err = cpuSince(*pid, cpu0); err != nil {
		return err
	}
	return report(stdout, *asJSON, rep, rep.String())
}

// runPOP3Fetch logs in with USER and PASS, and retrieves every message (or
// the first --max) with RETR, as a POP3 client downloading a maildrop does;
// --repeat sessions in a row, the totals reported.
func runPOP3Fetch(args []string, stdout io.Writer) error {
	fs := newFlagSet("pop3-fetch")
	addr := fs.String("pop3", "127.0.0.1:1110", "POP3 host:port")
	user := fs.String("user", "default", "POP3 user")
	pass := fs.String("pass", "", "POP3 password")
	maxN := fs.Int("max", 0, "retrieve at most this many messages a session (0: all)")
	repeat := fs.Int("repeat", 1, "sessions in a row (1 to 1000)")
	pid := fs.Int("pid", 0, "server process id, to report its CPU time over the run (0: not reported)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *repeat < 1 || *repeat > 1000 {
		return errors.New("--repeat must be 1 to 1000")
	}
	rep := fetchReport{Protocol: "pop3", Addr: *addr}
	cpu0, err := cpuTime(*pid)
	if err != nil {
		return err
	}
	start := time.Now()
	for i := 0; i < *repeat; i++ {
		if err := pop3Session(*addr, *user, *pass, *maxN, &rep); err != nil {
			return err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if rep.ServerCPUSeconds, err = cpuSince(*pid, cpu0); err != nil {
		return err
	}
	return report(stdout, *asJSON, rep, rep.String())
}

// pop3Session is one POP3 session that retrieves up to maxN messages (all for
// 0), adding them to rep.
func pop3Session(addr, user, pass string, maxN int, rep *fetchReport) error {
	nc, err := net.DialTimeout("tcp", addr, smtpTimeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Minute))
	r := bufio.NewReaderSize(nc, 64<<10)
	w := bufio.NewWriter(nc)
	status := func(cmd string) (string, error) {
		if cmd != "" {
			w.WriteString(cmd + "\r\n")
			if err := w.Flush(); err != nil {
				return "", err
			}
		}
		l, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(l, "+OK") {
			name, _, _ := strings.Cut(cmd, " ")
			return "", fmt.Errorf("%s: %s", name, strings.TrimSpace(l))
		}
		return strings.TrimSpace(l), nil
	}
	if _, err := status(""); err != nil {
		return err
	}
	if _, err := status("USER " + user); err != nil {
		return err
	}
	if _, err := status("PASS " + pass); err != nil {
		return err
	}
	stat, err := status("STAT")
	if err != nil {
		return err
	}
	f := strings.Fields(stat)
	if len(f) < 2 {
		return fmt.Errorf("STAT: %q", stat)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("STAT: %q", stat)
	}
	if maxN > 0 {
		n = min(n, maxN)
	}
	for i := 1; i <= n; i++ {
		if _, err := status(fmt.Sprintf("RETR %d", i)); err != nil {
			return err
		}
		for {
			l, err := r.ReadSlice('\n')
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return err
			}
			if string(l) == ".\r\n" {
				break
			}
			rep.Bytes += int64(len(l))
		}
		rep.Messages++
	}
	_, err = status("QUIT")
	return err
}

// clockTicks is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTicks = 100

// cpuTime reads a process's user and system CPU time, in seconds; 0 for pid 0.
func cpuTime(pid int) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process CPU time: %w", err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return (utime + stime) / clockTicks, nil
}

func cpuSince(pid int, start float64) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	now, err := cpuTime(pid)
	return now - start, err
}

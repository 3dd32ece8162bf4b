// Package dnstest serves DNS test zones on 127.0.0.1, over UDP and TCP on one
// port, for the tests of the deliverability checks: they ask a real DNS server
// over the real protocol, as in production, and never the network.
//
// Records are written as zone-file lines ("example.test. 300 IN TXT
// \"v=spf1 -all\""). The server answers authoritatively from them: the
// records of the type asked for (following a CNAME within the zones),
// NODATA for a name that exists without them (an empty non-terminal too),
// NXDOMAIN for a name that does not. A name can be made to fail (SERVFAIL) or
// to go unanswered (the client times out). A UDP answer longer than the
// client's EDNS0 size (512 bytes without EDNS0) is truncated, so the client
// must ask again over TCP (RFC 7766).
package dnstest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Server is a DNS server of test zones.
type Server struct {
	// Addr is the host:port the server listens on, over UDP and TCP.
	Addr string

	mu       sync.Mutex
	records  map[string][]dns.RR // by lower-case FQDN
	servfail map[string]bool
	drop     map[string]bool

	udpQueries, tcpQueries atomic.Int64
}

// Start serves records on 127.0.0.1 until t ends.
func Start(t testing.TB, records ...string) *Server {
	t.Helper()
	s := &Server{records: map[string][]dns.RR{}, servfail: map[string]bool{}, drop: map[string]bool{}}
	s.Add(t, records...)
	var pc net.PacketConn
	var l net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatalf("dnstest: listen udp: %v", err)
		}
		// TCP on the same port; another test may hold it, then try another.
		if l, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if attempt == 20 {
			t.Fatalf("dnstest: listen tcp: %v", err)
		}
	}
	s.Addr = pc.LocalAddr().String()
	udp := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	tcp := &dns.Server{Listener: l, Handler: dns.HandlerFunc(s.serve)}
	var started sync.WaitGroup
	started.Add(2)
	udp.NotifyStartedFunc = started.Done
	tcp.NotifyStartedFunc = started.Done
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	started.Wait()
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
	})
	return s
}

// Add adds records, written as zone-file lines; a bad line fails t.
func (s *Server) Add(t testing.TB, records ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range records {
		rr, err := dns.NewRR(line)
		if err != nil || rr == nil {
			t.Fatalf("dnstest: record %q: %v", line, err)
		}
		name := strings.ToLower(rr.Header().Name)
		s.records[name] = append(s.records[name], rr)
	}
}

// ServFail makes every question about name answer SERVFAIL.
func (s *Server) ServFail(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servfail[strings.ToLower(dns.Fqdn(name))] = true
}

// Drop makes every question about name go unanswered, as a server that is
// unreachable would leave it.
func (s *Server) Drop(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop[strings.ToLower(dns.Fqdn(name))] = true
}

// Queries returns how many questions were received over UDP and over TCP.
func (s *Server) Queries() (udp, tcp int) {
	return int(s.udpQueries.Load()), int(s.tcpQueries.Load())
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	isUDP := w.LocalAddr().Network() == "udp"
	if isUDP {
		s.udpQueries.Add(1)
	} else {
		s.tcpQueries.Add(1)
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	drop, fail := s.drop[name], s.servfail[name]
	answer, exists := s.answer(name, q.Qtype)
	s.mu.Unlock()
	switch {
	case drop:
		return
	case fail:
		m.Rcode = dns.RcodeServerFailure
	case !exists:
		m.Rcode = dns.RcodeNameError
	default:
		m.Answer = answer
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
	}
	if isUDP {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	w.WriteMsg(m)
}

// answer returns the records of qtype at name, after a CNAME chain within the
// zones, and whether name exists at all. Called with s.mu held.
func (s *Server) answer(name string, qtype uint16) ([]dns.RR, bool) {
	var out []dns.RR
	for hops := 0; hops < 8; hops++ {
		rrs := s.records[name]
		var cname *dns.CNAME
		for _, rr := range rrs {
			switch {
			case rr.Header().Rrtype == qtype:
				out = append(out, dns.Copy(rr))
			case rr.Header().Rrtype == dns.TypeCNAME && qtype != dns.TypeCNAME:
				cname = rr.(*dns.CNAME)
			}
		}
		if cname == nil || len(out) > 0 {
			return out, len(rrs) > 0 || s.hasChildren(name) || hops > 0
		}
		out = append(out, dns.Copy(cname))
		name = strings.ToLower(cname.Target)
	}
	return out, true
}

// hasChildren reports whether a record exists below name (name is then an
// empty non-terminal: it exists, with no records of its own).
func (s *Server) hasChildren(name string) bool {
	for n := range s.records {
		if strings.HasSuffix(n, "."+name) {
			return true
		}
	}
	return false
}

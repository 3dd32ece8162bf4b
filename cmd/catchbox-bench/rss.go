package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memory is what /proc/PID/status says about a process's resident set, in
// kibibytes. VmHWM is the kernel's own high-water mark, so it catches a peak
// that falls between two samples; VmRSS samples show when the peak happened.
type memory struct {
	RSS int64 // VmRSS, kB
	HWM int64 // VmHWM, kB
}

// readMemory parses VmRSS and VmHWM from /proc/PID/status.
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("read process status: %w", err)
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parse %s %q: %w", key, val, err)
		}
		*dst = n
	}
	if err := sc.Err(); err != nil {
		return memory{}, fmt.Errorf("read process status: %w", err)
	}
	return m, nil
}

// rssSampler polls a process's memory in the background for the length of a
// run, so the ingest benchmark can report the server's peak beside its rate.
type rssSampler struct {
	pid    int
	mu     sync.Mutex
	start  memory
	peak   int64 // highest VmRSS sampled, kB
	last   memory
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

// startRSS begins sampling pid every interval until stop is called.
func startRSS(pid int, interval time.Duration) (*rssSampler, error) {
	m, err := readMemory(pid)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &rssSampler{pid: pid, start: m, peak: m.RSS, last: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer func() {
			if r := recover(); r != nil {
				s.mu.Lock()
				s.err = fmt.Errorf("sampler panicked: %v", r)
				s.mu.Unlock()
			}
		}()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if !s.sample() {
					return
				}
			}
		}
	}()
	return s, nil
}

// sample reads memory once; it reports false when the process is gone.
func (s *rssSampler) sample() bool {
	m, err := readMemory(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return false
	}
	s.last = m
	s.peak = max(s.peak, m.RSS)
	return true
}

// rssResult is the memory part of a report, in mebibytes.
type rssResult struct {
	PID         int     `json:"pid"`
	StartRSSMiB float64 `json:"start_rss_mib"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	HWMMiB      float64 `json:"vmhwm_mib"`
	EndRSSMiB   float64 `json:"end_rss_mib"`
	Error       string  `json:"error,omitempty"`
}

func (r rssResult) String() string {
	return fmt.Sprintf("rss_start=%.1fMiB rss_peak=%.1fMiB vmhwm=%.1fMiB rss_end=%.1fMiB", r.StartRSSMiB, r.PeakRSSMiB, r.HWMMiB, r.EndRSSMiB)
}

// stop ends sampling, takes one last sample and returns the result.
func (s *rssSampler) stop() rssResult {
	s.cancel()
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := rssResult{
		PID:         s.pid,
		StartRSSMiB: mib(s.start.RSS),
		PeakRSSMiB:  mib(s.peak),
		HWMMiB:      mib(s.last.HWM),
		EndRSSMiB:   mib(s.last.RSS),
	}
	if s.err != nil {
		r.Error = s.err.Error()
	}
	return r
}

func mib(kb int64) float64 { return float64(kb) / 1024 }

// runRSS samples a process until it exits, the duration ends or the user
// presses Ctrl-C, then prints the peak. It wraps a load that another tool
// (for example smtp-source) generates.
func runRSS(args []string, stdout io.Writer) error {
	fs := newFlagSet("rss")
	pid := fs.Int("pid", 0, "process to watch (required)")
	interval := fs.Duration("interval", 100*time.Millisecond, "sampling interval")
	duration := fs.Duration("duration", 0, "stop after this long (0: until the process exits or Ctrl-C)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *pid <= 0 {
		return fmt.Errorf("--pid is required")
	}
	s, err := startRSS(*pid, *interval)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	r := s.stop()
	return report(stdout, *asJSON, r, "rss "+r.String())
}

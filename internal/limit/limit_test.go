package limit

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// clock is a settable time for the buckets.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClocked(perSecond float64, burst int) (*Buckets, *clock) {
	c := &clock{t: time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC)}
	b := New(perSecond, burst)
	b.Now = c.now
	return b, c
}

func TestBurstThenRate(t *testing.T) {
	b, c := newClocked(2, 3) // a token every 500 ms, three at most
	for i := 0; i < 3; i++ {
		if _, ok := b.Take("k"); !ok {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	retry, ok := b.Take("k")
	if ok || retry != 500*time.Millisecond {
		t.Fatalf("over the burst: ok=%v retry=%v, want refused, 500ms", ok, retry)
	}
	c.advance(499 * time.Millisecond)
	if retry, ok := b.Take("k"); ok || retry != time.Millisecond {
		t.Fatalf("1 ms early: ok=%v retry=%v", ok, retry)
	}
	c.advance(time.Millisecond)
	if _, ok := b.Take("k"); !ok {
		t.Fatal("refused once the token was due")
	}
	if _, ok := b.Take("other"); !ok {
		t.Fatal("another key was refused")
	}
	// A long pause refills the bucket to its burst, no further.
	c.advance(time.Hour)
	for i := 0; i < 3; i++ {
		if _, ok := b.Take("k"); !ok {
			t.Fatalf("take %d after a pause refused", i+1)
		}
	}
	if _, ok := b.Take("k"); ok {
		t.Fatal("the bucket held more than its burst")
	}
}

func TestReadyDoesNotSpend(t *testing.T) {
	b, c := newClocked(1, 2)
	for i := 0; i < 5; i++ {
		if _, ok := b.Ready("ip"); !ok {
			t.Fatal("Ready refused a full bucket")
		}
	}
	if b.Len() != 0 {
		t.Fatalf("Ready created %d buckets", b.Len())
	}
	b.Take("ip")
	b.Take("ip")
	if retry, ok := b.Ready("ip"); ok || retry != time.Second {
		t.Fatalf("empty bucket: Ready ok=%v retry=%v", ok, retry)
	}
	c.advance(time.Second)
	if _, ok := b.Ready("ip"); !ok {
		t.Fatal("Ready refused after the refill")
	}
}

func TestNilLimitsNothing(t *testing.T) {
	b := New(0, 10)
	if b != nil {
		t.Fatal("New(0, ...) is not nil")
	}
	for i := 0; i < 1000; i++ {
		if _, ok := b.Take("k"); !ok {
			t.Fatal("nil buckets refused")
		}
	}
}

// Buckets that have refilled are dropped, so memory follows the clients active
// lately; at the cap, memory stays bounded.
func TestIdleBucketsDropped(t *testing.T) {
	b, c := newClocked(10, 10) // refills from empty in one second
	for i := 0; i < 1000; i++ {
		b.Take(fmt.Sprint("client-", i))
	}
	if n := b.Len(); n != 1000 {
		t.Fatalf("%d buckets, want 1000", n)
	}
	c.advance(sweepInterval)
	b.Take("late")
	if n := b.Len(); n != 1 {
		t.Fatalf("%d buckets after every other refilled, want 1", n)
	}

	b.MaxKeys = 100
	for i := 0; i < 1000; i++ {
		b.Take(fmt.Sprint("flood-", i))
		if n := b.Len(); n > 100 {
			t.Fatalf("%d buckets, over the cap of 100", n)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {59500 * time.Millisecond, 60}} {
		if got := RetryAfter(tc.d); got != tc.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":                 "192.0.2.7",
		"::ffff:192.0.2.7":          "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:ffff::1": "2001:db8:1:2::/64",
		"::1":                       "::/64",
	} {
		if got := AddrKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("AddrKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func BenchmarkTake(b *testing.B) {
	bk := New(1e9, 1e9)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			bk.Take(keys[i%len(keys)])
			i++
		}
	})
}

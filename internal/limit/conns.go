package limit

import "sync"

// Conns counts the connections a listener holds open, in all and per client
// address key (AddrKey), against a cap on each: the SMTP, IMAP and POP3
// listeners refuse a connection over either. It is safe for concurrent use.
type Conns struct {
	max, perKey int

	mu    sync.Mutex
	total int
	byKey map[string]int
}

// NewConns returns a counter that admits at most max connections in all and
// perKey from one address key.
func NewConns(max, perKey int) *Conns {
	return &Conns{max: max, perKey: perKey, byKey: map[string]int{}}
}

// Refusal says why Acquire refused a connection.
type Refusal int

// Refusals of Acquire.
const (
	Admitted   Refusal = iota
	TooMany            // the listener holds max connections
	TooManyKey         // the address holds perKey connections
)

// Acquire counts a new connection from key, or refuses it when a cap is
// reached. Every admitted connection is Released once.
func (c *Conns) Acquire(key string) Refusal {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= c.max {
		return TooMany
	}
	if c.byKey[key] >= c.perKey {
		return TooManyKey
	}
	c.total++
	c.byKey[key]++
	return Admitted
}

// Release forgets one connection from key.
func (c *Conns) Release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.byKey[key]--; c.byKey[key] <= 0 {
		delete(c.byKey, key)
	}
}

// Open is the number of connections held now.
func (c *Conns) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

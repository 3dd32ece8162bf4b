package tenant

import (
	"context"
	"sync"
	"time"
)

// SetHooks sets the functions SignIn calls as an attempt arrives and once it
// is charged, just before its password is checked (tests).
func (ss *Sessions) SetHooks(arrived, evaluating func()) {
	ss.arrived, ss.evaluating = arrived, evaluating
}

// HashSlots is how many hashes the process's gate lets run at once.
const HashSlots = hashSlots

// HashPeak is the most password hashes the process's gate has seen running
// at once.
func HashPeak() int { return int(hashes.peak.Load()) }

// UseHashGate replaces the process's hash gate until the returned function
// restores it.
func UseHashGate(slots, queue int, wait time.Duration) (restore func()) {
	saved := hashes
	hashes = newHashGate(slots, queue, wait)
	return func() { hashes = saved }
}

// HoldHashSlot takes one slot of the hash gate until release is called.
func HoldHashSlot() (release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	go hashes.do(context.Background(), func() { close(held); <-done })
	<-held
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// HashWaiting is the number of hashes waiting for a slot.
func HashWaiting() int { return int(hashes.waiting.Load()) }

package httpapi

import "time"

// SetAuthHooks sets the functions guardAuth calls as a keyed request arrives
// and once it is charged, just before its key is looked up (tests).
func (l *Limits) SetAuthHooks(arrived, evaluating func()) {
	l.authArrived, l.authEvaluating = arrived, evaluating
}

// SetAuthWait sets how long a keyed request waits for the lookups in flight
// of its address (tests).
func (l *Limits) SetAuthWait(d time.Duration) { l.authFailures.Wait = d }

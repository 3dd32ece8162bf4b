package httpapi

// SetAuthHooks sets the functions guardAuth calls as a keyed request arrives
// and once it is charged, just before its key is looked up (tests).
func (l *Limits) SetAuthHooks(arrived, evaluating func()) {
	l.authArrived, l.authEvaluating = arrived, evaluating
}

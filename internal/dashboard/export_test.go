package dashboard

// SignInLinesInUse is how many client addresses have a sign-in holding or
// waiting for its line (lines.go).
func SignInLinesInUse(d *Dashboard) int { return d.signInLines.inUse() + d.deviceLines.inUse() }

// inUse is how many keys have a sign-in in progress.
func (l *lines) inUse() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byKey)
}

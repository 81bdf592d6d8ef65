package tuning

// Procs returns the GOMAXPROCS the governor last applied (only the
// tests use it).
func (g *Governor) Procs() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raised {
		return g.high
	}
	return g.low
}

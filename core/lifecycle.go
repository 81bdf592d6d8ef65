package core

import "github.com/code-runner-go/code-runner/configsvc"

// Reconfigurer is a component a reload reconfigures once every route
// serves the new snapshot: the engines (their warm pools follow the new
// sizes) and the idle sweeper (a lowered TTL reaps at once). An error makes
// the reload roll back — routes, live view and components go back to the
// previous configuration — so a bad edit never half-applies.
type Reconfigurer interface {
	Reconfigure(snap *configsvc.Snapshot) error
}

var _ Reconfigurer = (*Sweeper)(nil)

// Reconfigure moves the sweeper to snap and wakes it: it sweeps now under
// the new idle_ttl_secs.
func (s *Sweeper) Reconfigure(snap *configsvc.Snapshot) error {
	s.cfg.Store(snap)
	s.Wake()
	return nil
}

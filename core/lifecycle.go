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

// Reconfigure wakes the sweeper: it sweeps now under the live configuration.
func (s *Sweeper) Reconfigure(*configsvc.Snapshot) error {
	s.Wake()
	return nil
}

package core

import "github.com/code-runner-go/code-runner/configsvc"

// Committer is a component that acts on a configuration once it is live
// (the config_changed hook's clean-up step, after the swap): the engines'
// warm pools follow the new sizes, the idle sweeper sweeps at once under a
// lowered TTL. Components read the configuration itself from the one
// holder (Router.Live); Commit only tells them it changed. Nothing can
// refuse a committed configuration: validation happened before the swap.
type Committer interface {
	Commit(live *configsvc.Snapshot)
}

var _ Committer = (*Sweeper)(nil)

// Commit wakes the sweeper: it sweeps now under the new idle_ttl_secs.
func (s *Sweeper) Commit(*configsvc.Snapshot) { s.Wake() }

package configsvc

import "time"

// Snapshot is one immutable, complete configuration as it became live. The
// worker's router holds the live one (core.Router.Live); never modify a
// Snapshot once it is live.
type Snapshot struct {
	Config    Config
	Source    string    // where it came from, e.g. "configuration worker", "config file", "defaults"
	Seq       uint64    // increases by one with every swap
	AppliedAt time.Time // when it became live
}

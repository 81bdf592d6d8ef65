//go:build unix && !linux

package python

import "errors"

var errNoSnapshots = errors.New("memory snapshots need Linux (memfd)")

func (m *linearMemory) snapshot() error   { return errNoSnapshots }
func (m *linearMemory) restore(int) error { return errNoSnapshots }
func (m *linearMemory) closeSnapshot()    {}
func (m *linearMemory) snapshotSize() int { return 0 }

// populate does nothing here: pages fault in as they are written.
func populate([]byte) {}

// pagemapFile has nothing to open here.
type pagemapFile struct{}

func (*pagemapFile) get() int { return -1 }
func (*pagemapFile) close()   {}

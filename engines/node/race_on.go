//go:build race

package node

// raceShadowFactor scales allowances for the host's own Go memory: the race
// detector keeps shadow memory beside every Go allocation.
const raceShadowFactor = 4

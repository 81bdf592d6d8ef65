//go:build !race

package node

// raceShadowFactor scales allowances for the host's own Go memory: 1 without
// the race detector.
const raceShadowFactor = 1

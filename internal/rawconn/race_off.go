//go:build !race

package rawconn

// raceBuild is false outside race builds: see race_on.go.
const raceBuild = false

//go:build !unix

package app

// openFileLimit: systems without rlimits have no such limit to protect.
func openFileLimit() int { return 1 << 20 }

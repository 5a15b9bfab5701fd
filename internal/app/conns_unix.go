//go:build unix

package app

import "syscall"

// openFileLimit is the process's limit on open files (Go raises the soft
// limit to the hard one at start).
func openFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<20 {
		return 1 << 20
	}
	return int(rl.Cur)
}

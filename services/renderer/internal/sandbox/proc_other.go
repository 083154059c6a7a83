//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// sysProcAttr has no isolation to offer outside Linux.
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

// residentBytes is not available outside Linux: the memory bound is then
// only the worker's own GOMEMLIMIT.
func residentBytes(int) (int64, error) {
	return 0, errors.New("resident memory is only watched on Linux")
}

const canWatchMemory = false

//go:build !linux

package traffic

import (
	"errors"
	"syscall"
)

// readTCPInfo is not implemented outside Linux and returns nil.
func readTCPInfo(syscall.RawConn) *TCPInfo { return nil }

// readSteering is not implemented outside Linux and returns nil.
func readSteering(syscall.RawConn) *Steering { return nil }

// pinThread is not implemented outside Linux.
func pinThread(int) error { return errors.New("CPU pinning needs Linux") }

//go:build !linux

package traffic

import "syscall"

// readTCPInfo is not implemented outside Linux and returns nil.
func readTCPInfo(syscall.RawConn) *TCPInfo { return nil }

// readSteering is not implemented outside Linux and returns nil.
func readSteering(syscall.RawConn) *Steering { return nil }

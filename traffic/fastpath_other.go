//go:build !linux

package traffic

import "syscall"

// receiveFast has no fast path here: the generic loop runs.
func receiveFast(syscall.RawConn, *recvSink, int, func(int)) error {
	return errFastPathUnsupported
}

package traffic

import (
	"errors"
	"sync"
)

// errFastPathUnsupported marks a fast path that does not apply (not a TCP
// socket, switched off, not built for this platform) or that the kernel
// refused before any byte moved; the caller then takes the generic
// net.Conn loop.
var errFastPathUnsupported = errors.New("fast path not supported")

// recvSink is what a Receiver's streams read into when the payload is
// discarded without copying (recv with MSG_TRUNC): one buffer of size bytes
// for every stream, which the kernel never writes.
type recvSink struct {
	size int
	once sync.Once
	buf  []byte
}

// discard returns the shared buffer, allocated on first use.
func (s *recvSink) discard() []byte {
	s.once.Do(func() { s.buf = make([]byte, s.size) })
	return s.buf
}

package traffic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Wire format; see the package documentation.
const (
	protoVersion = 1

	magicHello   = 0x4e505448 // "NPTH"
	magicAck     = 0x4e50414b // "NPAK"
	magicTrailer = 0x4e50464e // "NPFN"

	helloLen   = 32
	ackLen     = 8
	trailerLen = 16
)

// hello flags.
const (
	// flagReverse: the dialing end receives and the accepting end sends.
	flagReverse uint16 = 1 << 0

	knownFlags = flagReverse
)

// ack status codes.
const (
	ackOK uint32 = iota
	ackBadVersion
	ackBadStream
	ackStreamCount
	ackDuplicate
	ackOtherRun
	ackDirection
	ackBadFlags
)

var ackText = map[uint32]string{
	ackOK:          "ok",
	ackBadVersion:  "unsupported protocol version",
	ackBadStream:   "stream index out of range",
	ackStreamCount: "stream count differs from the receiver's",
	ackDuplicate:   "stream index already connected",
	ackOtherRun:    "receiver is serving another run",
	ackDirection:   "direction (send or reverse) differs from the peer's",
	ackBadFlags:    "unknown flags in hello",
}

// errNotNetprof marks a peer that does not speak this protocol.
var errNotNetprof = errors.New("peer does not speak the netprof traffic protocol")

type hello struct {
	version uint16
	flags   uint16
	stream  uint32
	streams uint32
	runID   [16]byte
}

func (h hello) marshal() [helloLen]byte {
	var b [helloLen]byte
	binary.BigEndian.PutUint32(b[0:], magicHello)
	binary.BigEndian.PutUint16(b[4:], h.version)
	binary.BigEndian.PutUint16(b[6:], h.flags)
	binary.BigEndian.PutUint32(b[8:], h.stream)
	binary.BigEndian.PutUint32(b[12:], h.streams)
	copy(b[16:], h.runID[:])
	return b
}

func readHello(r io.Reader) (hello, error) {
	var b [helloLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return hello{}, fmt.Errorf("read hello: %w", err)
	}
	if binary.BigEndian.Uint32(b[0:]) != magicHello {
		return hello{}, fmt.Errorf("read hello: %w", errNotNetprof)
	}
	h := hello{
		version: binary.BigEndian.Uint16(b[4:]),
		flags:   binary.BigEndian.Uint16(b[6:]),
		stream:  binary.BigEndian.Uint32(b[8:]),
		streams: binary.BigEndian.Uint32(b[12:]),
	}
	copy(h.runID[:], b[16:])
	return h, nil
}

func writeAck(w io.Writer, status uint32) error {
	var b [ackLen]byte
	binary.BigEndian.PutUint32(b[0:], magicAck)
	binary.BigEndian.PutUint32(b[4:], status)
	_, err := w.Write(b[:])
	return err
}

// readAck returns nil for ackOK, else an error saying why the receiver
// refused the stream.
func readAck(r io.Reader) error {
	var b [ackLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("read ack: %w", err)
	}
	if binary.BigEndian.Uint32(b[0:]) != magicAck {
		return fmt.Errorf("read ack: %w", errNotNetprof)
	}
	st := binary.BigEndian.Uint32(b[4:])
	if st == ackOK {
		return nil
	}
	text, ok := ackText[st]
	if !ok {
		text = fmt.Sprintf("status %d", st)
	}
	return fmt.Errorf("peer refused the stream: %s", text)
}

func writeTrailer(w io.Writer, n uint64) error {
	var b [trailerLen]byte
	binary.BigEndian.PutUint32(b[0:], magicTrailer)
	binary.BigEndian.PutUint64(b[8:], n)
	_, err := w.Write(b[:])
	return err
}

func readTrailer(r io.Reader) (uint64, error) {
	var b [trailerLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("read trailer: %w", err)
	}
	if binary.BigEndian.Uint32(b[0:]) != magicTrailer {
		return 0, fmt.Errorf("read trailer: %w", errNotNetprof)
	}
	return binary.BigEndian.Uint64(b[8:]), nil
}

package blob

import (
	"io"
	"sync"
)

// patternLen is the period of the synthetic content: 1 MiB + 7 bytes, so
// the pattern does not line up with power-of-two block sizes and a block
// written at the wrong offset changes the content's hash.
const patternLen = 1<<20 + 7

// pattern is the synthetic content's period, made once.
var pattern = sync.OnceValue(func() []byte {
	p := make([]byte, patternLen+MaxPatternRead)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range patternLen {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x >> 32)
	}
	// The tail repeats the head so a read of up to MaxPatternRead bytes
	// at any phase is one copy.
	copy(p[patternLen:], p[:MaxPatternRead])
	return p
})

// MaxPatternRead is the most bytes Synthetic copies per step.
const MaxPatternRead = 256 << 10

// Synthetic is Size bytes of a fixed pseudo-random pattern with period
// 1 MiB + 7, generated once and then only copied: cheap enough to push
// hundreds of GB without a source file. Byte i is the same in every
// Synthetic, so a pulled copy can be checked against it.
type Synthetic struct{ Size int64 }

// ReadAt implements io.ReaderAt.
func (s Synthetic) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if off >= s.Size {
		return 0, io.EOF
	}
	var err error
	if rem := s.Size - off; int64(len(p)) > rem {
		p, err = p[:rem], io.EOF
	}
	pat := pattern()
	n := 0
	for n < len(p) {
		phase := int((off + int64(n)) % patternLen)
		n += copy(p[n:min(len(p), n+MaxPatternRead)], pat[phase:])
	}
	return n, err
}

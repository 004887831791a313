package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Accepted holds the streams AcceptStreams established, by direction:
// Forward[i] and Reverse[i] are stream i of each.
type Accepted struct {
	Forward, Reverse []net.Conn
}

// Close closes every connection in a (for when they will not be run).
func (a *Accepted) Close() {
	for _, cs := range [][]net.Conn{a.Forward, a.Reverse} {
		for _, c := range cs {
			if c != nil {
				_ = c.Close()
			}
		}
	}
}

// AcceptStreams accepts on every listener in lns until it has the run's
// forward streams 0..forward-1 and reverse streams 0..reverse-1 (the hello
// says which; streams may arrive on any listener). A connection that does
// not speak the protocol is dropped; one that does but does not fit (another
// run id, wrong stream count, duplicate, unknown direction) is refused with
// the reason, which the dialing end reports. Each hello must arrive within
// helloTimeout of the connection. AcceptStreams closes every listener before
// it returns. On success the connections have no deadlines set; if ctx ends
// first it closes every connection it had accepted and returns an error
// naming the streams that never arrived, wrapping ctx.Err().
func AcceptStreams(ctx context.Context, lns []net.Listener, id RunID, forward, reverse int) (*Accepted, error) {
	if forward < 0 || reverse < 0 || forward+reverse < 1 || forward > MaxStreams || reverse > MaxStreams {
		closeListeners(lns)
		return nil, fmt.Errorf("accept streams: invalid stream counts %d forward, %d reverse: want 0..%d each, at least one in all", forward, reverse, MaxStreams)
	}
	a := &acceptor{
		id:       id,
		got:      Accepted{Forward: make([]net.Conn, forward), Reverse: make([]net.Conn, reverse)},
		reserved: Accepted{Forward: make([]net.Conn, forward), Reverse: make([]net.Conn, reverse)},
		want:     forward + reverse,
		pending:  map[net.Conn]struct{}{},
		complete: make(chan struct{}),
	}
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Go(func() { a.acceptLoop(ln, &wg) })
	}
	var err error
	select {
	case <-a.complete:
	case <-ctx.Done():
		err = ctx.Err()
	}
	closeListeners(lns)
	a.stop()
	wg.Wait()
	if err != nil {
		a.got.Close()
		return nil, fmt.Errorf("accept streams: %s: %w", a.missing(), err)
	}
	return &a.got, nil
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

type acceptor struct {
	id RunID

	mu       sync.Mutex
	got      Accepted
	reserved Accepted // slots whose ack is being written
	have     int
	want     int
	pending  map[net.Conn]struct{} // in handshake; nil once stopped
	complete chan struct{}         // closed when have == want
	refused  int
	last     error
}

func (a *acceptor) acceptLoop(ln net.Listener, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by AcceptStreams
		}
		a.mu.Lock()
		if a.pending == nil {
			a.mu.Unlock()
			_ = c.Close()
			continue
		}
		a.pending[c] = struct{}{}
		a.mu.Unlock()
		wg.Go(func() { a.handshake(c) })
	}
}

// handshake reads one hello, claims its slot and acks it; the connection
// is kept only if all of that succeeds.
func (a *acceptor) handshake(c net.Conn) {
	keep := false
	defer func() {
		a.mu.Lock()
		if a.pending != nil {
			delete(a.pending, c)
		}
		a.mu.Unlock()
		if !keep {
			_ = c.Close()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	h, err := readHello(c)
	if err != nil {
		a.note(c, err)
		return
	}
	dir, slot, status := a.reserve(h, c)
	if err := writeAck(c, status); err != nil || status != ackOK {
		if status == ackOK {
			a.release(dir, slot)
		}
		a.note(c, fmt.Errorf("stream %d: %s", h.stream, ackText[status]))
		return
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		a.release(dir, slot)
		return
	}
	keep = a.commit(dir, slot, c)
}

func (a *acceptor) slots(set *Accepted, dir Direction) []net.Conn {
	if dir == Reverse {
		return set.Reverse
	}
	return set.Forward
}

// reserve checks h and reserves its slot.
func (a *acceptor) reserve(h hello, c net.Conn) (Direction, int, uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	dir := Forward
	if h.flags&flagReverse != 0 {
		dir = Reverse
	}
	got, res := a.slots(&a.got, dir), a.slots(&a.reserved, dir)
	i := int(h.stream)
	switch {
	case h.version != protoVersion:
		return dir, i, ackBadVersion
	case h.flags&^knownFlags != 0:
		return dir, i, ackBadFlags
	case a.pending == nil || h.runID != a.id:
		return dir, i, ackOtherRun
	case len(got) == 0:
		return dir, i, ackDirection
	case int(h.streams) != len(got):
		return dir, i, ackStreamCount
	case i >= len(got):
		return dir, i, ackBadStream
	case got[i] != nil || res[i] != nil:
		return dir, i, ackDuplicate
	}
	res[i] = c
	return dir, i, ackOK
}

func (a *acceptor) release(dir Direction, i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slots(&a.reserved, dir)[i] = nil
}

// commit moves a reserved slot to got; false if AcceptStreams has stopped
// (the caller then closes c).
func (a *acceptor) commit(dir Direction, i int, c net.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.slots(&a.reserved, dir)[i] = nil
	if a.pending == nil {
		return false
	}
	delete(a.pending, c) // now owned by got: stop must not close it
	a.slots(&a.got, dir)[i] = c
	a.have++
	if a.have == a.want {
		close(a.complete)
	}
	return true
}

func (a *acceptor) note(c net.Conn, err error) {
	if errors.Is(err, errNotNetprof) {
		err = fmt.Errorf("not a netprof stream: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused++
	a.last = fmt.Errorf("%s: %w", c.RemoteAddr(), err)
}

// stop makes later handshakes fail and closes those in progress.
func (a *acceptor) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.pending {
		_ = c.Close()
	}
	a.pending = nil
}

// missing describes the streams that did not arrive (after stop).
func (a *acceptor) missing() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := func(cs []net.Conn) []int {
		var out []int
		for i, c := range cs {
			if c == nil {
				out = append(out, i)
			}
		}
		return out
	}
	s := fmt.Sprintf("%d of %d streams arrived", a.have, a.want)
	if m := list(a.got.Forward); len(m) > 0 {
		s += fmt.Sprintf("; missing forward streams %v", m)
	}
	if m := list(a.got.Reverse); len(m) > 0 {
		s += fmt.Sprintf("; missing reverse streams %v", m)
	}
	if a.refused > 0 {
		s += fmt.Sprintf("; refused %d connections (last: %v)", a.refused, a.last)
	}
	return s
}

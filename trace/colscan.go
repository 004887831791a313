package trace

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
)

// scanQueue is how many decoded batches of one row group may wait for the
// callback; with Workers row groups in flight, at most about
// Workers × (scanQueue + 1) batches exist at once.
const scanQueue = 4

// columnScan is one ScanColumns call: workers decode row groups (each
// worker one row group at a time, in increasing order) into per-row-group
// queues that the caller drains in file order.
type columnScan struct {
	rgs       []parquet.RowGroup
	first     []int64 // index in the file of each row group's first row
	plan      []colPlan
	workers   int
	batchRows int
	strs      *stringTable
	free      chan *ColumnBatch
}

// scanItem is a decoded batch or the error that ended a row group.
type scanItem struct {
	b   *ColumnBatch
	err error
}

// errScanStopped ends a worker whose consumer has returned.
var errScanStopped = errors.New("column scan stopped")

func newColumnScan(rgs []parquet.RowGroup, plan []colPlan, opts ColumnScanOptions) *columnScan {
	s := &columnScan{rgs: rgs, plan: plan, workers: max(opts.Workers, 1),
		batchRows: opts.BatchRows, strs: newStringTable()}
	if s.batchRows < 1 {
		s.batchRows = ScanBatchRows
	}
	s.workers = min(s.workers, max(len(s.rgs), 1))
	s.free = make(chan *ColumnBatch, s.workers*(scanQueue+2)+1)
	var n int64
	for _, rg := range s.rgs {
		s.first = append(s.first, n)
		n += rg.NumRows()
	}
	return s
}

// run decodes every row group and calls fn on each batch, in order. It
// returns fn's error wrapped in callbackError.
func (s *columnScan) run(fn func(*ColumnBatch) error) error {
	outs := make([]chan scanItem, len(s.rgs))
	for i := range outs {
		outs[i] = make(chan scanItem, scanQueue)
	}
	done := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(&next, outs, done)
		}()
	}
	defer func() { // also when fn panics: no worker is left blocked
		close(done)
		wg.Wait()
	}()
	return s.consume(outs, fn)
}

// consume passes the batches of each row group to fn in order and
// recycles them.
func (s *columnScan) consume(outs []chan scanItem, fn func(*ColumnBatch) error) error {
	for i := range outs {
		for it := range outs[i] {
			if it.err != nil {
				return fmt.Errorf("row group %d: %w", i, it.err)
			}
			err := fn(it.b)
			s.recycle(it.b)
			if err != nil {
				return callbackError{err}
			}
		}
	}
	return nil
}

// work decodes the next unclaimed row group until none is left, the
// consumer stops (done) or a row group fails (its error is queued).
func (s *columnScan) work(next *atomic.Int64, outs []chan scanItem, done <-chan struct{}) {
	local := s.strs.local()
	for {
		i := int(next.Add(1) - 1)
		if i >= len(outs) {
			return
		}
		err := s.readRowGroup(i, local, func(b *ColumnBatch) bool {
			select {
			case outs[i] <- scanItem{b: b}:
				return true
			case <-done:
				return false
			}
		})
		if errors.Is(err, errScanStopped) {
			return
		}
		if err != nil {
			select {
			case outs[i] <- scanItem{err: err}:
			case <-done:
			}
			return
		}
		close(outs[i])
	}
}

// readRowGroup decodes row group i batch by batch into emit, which
// returns false when the consumer has stopped. parquet-go panics on some
// corrupt data: a panic becomes an error.
func (s *columnScan) readRowGroup(i int, local *localStrings, emit func(*ColumnBatch) bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decode: %v", p)
		}
	}()
	rg := s.rgs[i]
	chunks := rg.ColumnChunks()
	curs := make([]*colCursor, len(s.plan))
	defer func() { err = errors.Join(err, closeCursors(curs)) }()
	for c := range s.plan {
		if leaf := s.plan[c].leaf; leaf >= 0 {
			if leaf >= len(chunks) {
				return fmt.Errorf("column %q: no column chunk: %w", s.plan[c].Name, parquet.ErrCorrupted)
			}
			curs[c] = newCursor(&s.plan[c], chunks[leaf], local)
		}
	}
	total := rg.NumRows()
	for off := int64(0); off < total; {
		n := int(min(int64(s.batchRows), total-off))
		b := s.batch()
		b.RowGroup, b.Row = i, s.first[i]+off
		b.resize(n)
		if err := fillBatch(b, curs, n); err != nil {
			s.recycle(b)
			return err
		}
		if !emit(b) {
			return errScanStopped
		}
		off += int64(n)
	}
	return nil
}

// fillBatch fills b's first n rows from the cursors (nil: missing column).
func fillBatch(b *ColumnBatch, curs []*colCursor, n int) error {
	for c, cur := range curs {
		if cur != nil {
			if err := cur.fill(&b.cols[c], 0, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeCursors closes every non-nil cursor.
func closeCursors(curs []*colCursor) error {
	var errs []error
	for _, c := range curs {
		if c != nil {
			errs = append(errs, c.close())
		}
	}
	return errors.Join(errs...)
}

// batch returns a free batch, or a new one.
func (s *columnScan) batch() *ColumnBatch {
	select {
	case b := <-s.free:
		return b
	default:
		return newBatch(s.plan, s.batchRows, s.strs)
	}
}

// recycle returns b to the free list (dropping it when the list is full).
func (s *columnScan) recycle(b *ColumnBatch) {
	select {
	case s.free <- b:
	default:
	}
}

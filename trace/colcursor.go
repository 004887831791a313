package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// colCursor reads one column chunk page by page into batches. A page's
// non-null values are held as raw 64- or 32-bit words (string columns as
// ids) and converted to the kind's type when copied into a batch.
type colCursor struct {
	plan  *colPlan
	pages parquet.Pages
	page  parquet.Page
	strs  *localStrings

	rows, row, vi int    // rows in the page, next row, next non-null value
	def           []byte // definition levels (nil: every row has a value)
	w64           []uint64
	w32           []uint32

	buf64  []uint64 // values looked up in a dictionary
	buf32  []uint32
	dict   parquet.Dictionary
	dict64 []uint64
	dict32 []uint32
}

// newCursor starts reading chunk for plan p.
func newCursor(p *colPlan, chunk parquet.ColumnChunk, strs *localStrings) *colCursor {
	return &colCursor{plan: p, pages: chunk.Pages(), strs: strs}
}

// is64 reports whether the cursor's column holds 64-bit words.
func (c *colCursor) is64() bool {
	return c.plan.Kind == Int64Col || c.plan.Kind == Uint64Col || c.plan.Kind == TimeCol
}

// close releases the current page and the page reader.
func (c *colCursor) close() error {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	return c.pages.Close()
}

// fill copies the next n rows into dst[off:off+n], reading pages as needed.
func (c *colCursor) fill(dst *batchColumn, off, n int) error {
	for n > 0 {
		if c.row >= c.rows {
			if err := c.next(); err != nil {
				return fmt.Errorf("column %q: %w", c.plan.Name, err)
			}
			continue
		}
		k := min(n, c.rows-c.row)
		c.copyOut(dst, off, k)
		off, n, c.row = off+k, n-k, c.row+k
	}
	return nil
}

// copyOut copies k rows from the page's current row into dst at off.
func (c *colCursor) copyOut(dst *batchColumn, off, k int) {
	var valid []bool
	if dst.valid != nil {
		valid = dst.valid[off : off+k]
	}
	switch c.plan.Kind {
	case Int64Col, TimeCol:
		out := dst.i64[off : off+k]
		c.vi = fillRows(out, valid, c.w64, c.def, c.row, c.vi)
		if m := c.plan.timeMul; c.plan.Kind == TimeCol && m != 1 {
			for j := range out {
				out[j] *= m
			}
		}
	case Uint64Col:
		c.vi = fillRows(dst.u64[off:off+k], valid, c.w64, c.def, c.row, c.vi)
	case Int32Col:
		c.vi = fillRows(dst.i32[off:off+k], valid, c.w32, c.def, c.row, c.vi)
	default:
		c.vi = fillRows(dst.u32[off:off+k], valid, c.w32, c.def, c.row, c.vi)
	}
}

// word is the raw storage of page values and the kinds they convert to.
type word interface {
	~int32 | ~uint32 | ~int64 | ~uint64
}

// fillRows copies len(dst) rows starting at page row into dst: from
// src[vi:] in order for rows whose definition level says non-null, 0 for
// null rows, setting valid (when not nil). def nil means no nulls. It
// returns the next vi.
func fillRows[D, S word](dst []D, valid []bool, src []S, def []byte, row, vi int) int {
	if def == nil {
		src = src[vi : vi+len(dst)]
		if same, ok := any(dst).([]S); ok {
			copy(same, src)
		} else {
			for j, v := range src {
				dst[j] = D(v)
			}
		}
		for j := range valid {
			valid[j] = true
		}
		return vi + len(dst)
	}
	for j, d := range def[row : row+len(dst)] {
		if d != 0 {
			dst[j] = D(src[vi])
			vi++
		} else {
			dst[j] = 0
		}
		valid[j] = d != 0
	}
	return vi
}

// next moves to the next page and decodes its values.
func (c *colCursor) next() error {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	p, err := c.pages.ReadPage()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("fewer values than rows: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return err
	}
	c.page = p
	c.rows, c.row, c.vi = int(p.NumRows()), 0, 0
	c.def = nil
	n := c.rows
	if lv := p.DefinitionLevels(); c.plan.optional && len(lv) > 0 {
		if len(lv) != c.rows {
			return fmt.Errorf("page has %d definition levels for %d rows: %w", len(lv), c.rows, parquet.ErrCorrupted)
		}
		if n = bytes.Count(lv, []byte{1}); n < c.rows {
			c.def = lv // else no nulls: copy the values as they are
		}
	}
	data := p.Data()
	if d := p.Dictionary(); d != nil {
		return c.lookup(d, data.Int32(), n)
	}
	return c.plain(data, n)
}

// plain sets the page's n values from its decoded data.
func (c *colCursor) plain(data encoding.Values, n int) error {
	var err error
	switch {
	case c.is64():
		c.w64 = data.Uint64()
	case c.plan.Kind == StringCol:
		vals, offs := data.ByteArray()
		c.buf32, err = c.strs.internAll(c.buf32[:0], vals, offs)
		c.w32 = c.buf32
	default:
		c.w32 = data.Uint32()
	}
	if err == nil && len(c.w64)+len(c.w32) < n {
		err = fmt.Errorf("page has %d values for %d non-null rows: %w", len(c.w64)+len(c.w32), n, parquet.ErrCorrupted)
	}
	return err
}

// lookup sets the page's n values from dictionary indexes idx.
func (c *colCursor) lookup(d parquet.Dictionary, idx []int32, n int) error {
	if d != c.dict {
		if err := c.setDict(d); err != nil {
			return err
		}
	}
	if len(idx) < n {
		return fmt.Errorf("page has %d values for %d non-null rows: %w", len(idx), n, parquet.ErrCorrupted)
	}
	var err error
	if c.is64() {
		c.buf64, err = gather(c.buf64[:0], c.dict64, idx[:n])
		c.w64 = c.buf64
	} else {
		c.buf32, err = gather(c.buf32[:0], c.dict32, idx[:n])
		c.w32 = c.buf32
	}
	return err
}

// setDict copies (or, for strings, interns) dictionary d's values.
func (c *colCursor) setDict(d parquet.Dictionary) error {
	c.dict, c.w64, c.w32 = nil, nil, nil
	if err := c.plain(d.Page().Data(), 0); err != nil {
		return err
	}
	if c.is64() {
		c.dict64 = append(c.dict64[:0], c.w64...)
	} else {
		c.dict32 = append(c.dict32[:0], c.w32...)
	}
	c.dict = d
	return nil
}

// gather appends dict[i] for each index i to dst.
func gather[T any](dst, dict []T, idx []int32) ([]T, error) {
	for _, i := range idx {
		if uint(i) >= uint(len(dict)) {
			return dst, fmt.Errorf("dictionary index %d out of %d values: %w", i, len(dict), parquet.ErrCorrupted)
		}
		dst = append(dst, dict[i])
	}
	return dst, nil
}

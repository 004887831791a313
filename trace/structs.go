package trace

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// ScanStructs is Scan decoded column by column (ScanColumns) instead of
// through parquet-go's row reflection: several times faster, for row types
// whose fields are all of the kinds the trace schema uses. It returns the
// same rows as Scan: T's `parquet` tags name the columns, columns the file
// lacks read as zero or nil, times come back in time.UTC, and fn may keep
// the slice it is given.
//
// T must be a struct whose tagged fields are time.Time (a timestamp
// column), int64, int32, uint64, uint32, uint16, uint8 or string, or a
// pointer to one of these for an optional column; any other field type is
// an error, returned before any row is read. Errors are as Scan's.
func ScanStructs[T any](r *Run, file string, opts ColumnScanOptions, fn func([]T) error) error {
	fields, err := structFields(reflect.TypeFor[T]())
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	cols := make([]Column, len(fields))
	for i, f := range fields {
		cols[i] = f.col
	}
	return ScanColumns(r, file, cols, opts, func(b *ColumnBatch) error {
		rows := make([]T, b.Len)
		rv := reflect.ValueOf(rows)
		for i := range b.Len {
			row := rv.Index(i)
			for c := range fields {
				fields[c].set(row, b, c, i)
			}
		}
		return fn(rows)
	})
}

// structField is one tagged field of a row type and its column.
type structField struct {
	col   Column
	index int
	ptr   bool         // optional column: the field is a pointer
	elem  reflect.Type // the field's type, or what it points to
}

// timeType is the type of timestamp fields.
var timeType = reflect.TypeFor[time.Time]()

// structFields returns the tagged fields of struct type t.
func structFields(t reflect.Type) ([]structField, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("row type %v is not a struct", t)
	}
	var out []structField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("parquet"), ",")
		if name == "-" || !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := structField{col: Column{Name: name}, index: i, elem: sf.Type}
		if sf.Type.Kind() == reflect.Pointer {
			f.ptr, f.elem = true, sf.Type.Elem()
		}
		if f.col.Kind = kindOf(f.elem); f.col.Kind == 0 {
			return nil, fmt.Errorf("field %s of %v: type %v not supported", sf.Name, t, sf.Type)
		}
		out = append(out, f)
	}
	return out, nil
}

// kindOf returns the column kind that reads into type t (0: none).
func kindOf(t reflect.Type) ColumnKind {
	if t == timeType {
		return TimeCol
	}
	switch t.Kind() {
	case reflect.Int64:
		return Int64Col
	case reflect.Int32:
		return Int32Col
	case reflect.Uint64:
		return Uint64Col
	case reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return Uint32Col
	case reflect.String:
		return StringCol
	}
	return 0
}

// set sets the field of row from row i of column c of b (nil or zero for
// null).
func (f *structField) set(row reflect.Value, b *ColumnBatch, c, i int) {
	if v := b.Valid(c); v != nil && !v[i] {
		return // rows start zero: nil pointer, zero value
	}
	dst := row.Field(f.index)
	if f.ptr {
		p := reflect.New(f.elem)
		dst.Set(p)
		dst = p.Elem()
	}
	switch f.col.Kind {
	case TimeCol:
		dst.Set(reflect.ValueOf(time.Unix(0, b.Int64(c)[i]).UTC()))
	case Int64Col:
		dst.SetInt(b.Int64(c)[i])
	case Int32Col:
		dst.SetInt(int64(b.Int32(c)[i]))
	case Uint64Col:
		dst.SetUint(b.Uint64(c)[i])
	case Uint32Col:
		dst.SetUint(uint64(b.Uint32(c)[i]))
	case StringCol:
		dst.SetString(b.String(b.StringIDs(c)[i]))
	}
}

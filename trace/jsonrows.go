package trace

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// IntervalJSON returns one interval's rows as a JSON object keyed by
// table ("ifaces", "cpus", "flows", "traffic", "probes", "sockets"; a table
// without rows is left out), each row an object with the trace's column
// names as keys in schema order: the same names and units as the Parquet
// files, for a live feed (`--json-stream`). Times are RFC 3339 in UTC
// with nanoseconds; null columns are null.
func IntervalJSON(iv Interval) ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, t := range []struct {
		name string
		rows any
	}{{"ifaces", iv.Ifaces}, {"cpus", iv.CPUs}, {"flows", iv.Flows}, {"traffic", iv.Traffic},
		{"probes", iv.Probes}, {"sockets", iv.Sockets}, {"nics", iv.NICs}, {"drops", iv.Drops}} {
		v := reflect.ValueOf(t.rows)
		if v.Len() == 0 {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		fmt.Fprintf(&b, "%q:[", t.name)
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := rowJSON(&b, v.Index(i)); err != nil {
				return nil, fmt.Errorf("%s row %d: %w", t.name, i, err)
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// jsonField is one column of a row type: its field index and JSON key.
type jsonField struct {
	index int
	key   string // the column name, JSON-quoted
}

var jsonFields sync.Map // reflect.Type -> []jsonField

func fieldsOf(t reflect.Type) []jsonField {
	if f, ok := jsonFields.Load(t); ok {
		return f.([]jsonField)
	}
	var out []jsonField
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("parquet")
		name, _, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		k, _ := json.Marshal(name)
		out = append(out, jsonField{index: i, key: string(k)})
	}
	jsonFields.Store(t, out)
	return out
}

func rowJSON(b *strings.Builder, row reflect.Value) error {
	b.WriteByte('{')
	for i, f := range fieldsOf(row.Type()) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.key)
		b.WriteByte(':')
		v := row.Field(f.index)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				b.WriteString("null")
				continue
			}
			v = v.Elem()
		}
		var x any = v.Interface()
		if t, ok := x.(time.Time); ok {
			x = t.UTC().Format(time.RFC3339Nano)
		}
		enc, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(enc)
	}
	b.WriteByte('}')
	return nil
}

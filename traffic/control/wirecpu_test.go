package control

import (
	"reflect"
	"testing"

	"github.com/netprof/netprof/internal/cpustat"
)

// Every field of cpustat.Usage crosses the wire and back, and the wire
// type names each as cpustat.Usage's JSON does.
func TestWireCPURoundTrip(t *testing.T) {
	var u cpustat.Usage
	v := reflect.ValueOf(&u).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		default:
			t.Fatalf("field %s of kind %v: extend the test", v.Type().Field(i).Name, f.Kind())
		}
	}
	if got := WireCPU(u).Usage(); got != u {
		t.Errorf("round trip %+v, want %+v", got, u)
	}
	wt, ut := reflect.TypeOf(CPUUsage{}), reflect.TypeOf(u)
	if wt.NumField() != ut.NumField() {
		t.Fatalf("wire type has %d fields, cpustat.Usage %d", wt.NumField(), ut.NumField())
	}
	for i := range ut.NumField() {
		if f, ok := wt.FieldByName(ut.Field(i).Name); !ok || f.Tag.Get("json") != ut.Field(i).Tag.Get("json") {
			t.Errorf("field %s: wire %v", ut.Field(i).Name, f.Tag)
		}
	}
}

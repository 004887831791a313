package kerneltest

import (
	"testing"

	"github.com/netprof/netprof/loader"
)

// Load loads and attaches a probe for a test, closed when the test ends.
// It skips (see Skip) unless running as root on a kernel with what the
// loader needs (loader.Check), and fails t unless every program of the
// spec attached.
func Load(t testing.TB, spec loader.Spec, specErr error) *loader.Loaded {
	t.Helper()
	RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		Skip(t, err.Error())
	}
	if specErr != nil {
		t.Fatal(specErr)
	}
	l, err := loader.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, st := range l.Status {
		if !st.Attached {
			t.Fatalf("%s (%s) not attached: %s", st.Name, st.Hook, st.Reason)
		}
	}
	return l
}

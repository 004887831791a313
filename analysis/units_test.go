package analysis

import (
	"errors"
	"strings"
	"testing"
)

// A rated speed needs a unit: a bare number (ethtool's "10000", which is
// Mb/s) would be bit/s. It is refused with a suggestion.
func TestParseRateBareNumber(t *testing.T) {
	for _, bare := range []string{"10", "10000", " 5000 ", "1e10", "0"} {
		_, err := ParseRate(bare)
		if !errors.Is(err, ErrNoUnit) || err == nil || !strings.Contains(err.Error(), "10000Mbit") {
			t.Errorf("ParseRate(%q) = %v; want ErrNoUnit suggesting 10000Mbit", bare, err)
		}
	}
	if got, err := ParseRate("10000Mbit"); err != nil || got != 10e9 {
		t.Errorf("ParseRate(10000Mbit) = %g, %v", got, err)
	}
}

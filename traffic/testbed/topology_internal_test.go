package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
)

// A failure after any step of the delayed and routed constructors removes
// everything created so far: namespaces, and the TUN descriptors (the
// package's TestMain checks for leaked descriptors and goroutines).
func TestTopologiesRollBack(t *testing.T) {
	if err := Supported(); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	injected := errors.New("injected failure")
	cases := []struct {
		name  string
		steps []string
		build func(prefix string) (*Bed, error)
	}{
		{"delayed", []string{"netns-a", "netns-b", "tun", "configured", "up"}, func(p string) (*Bed, error) {
			return New(context.Background(), Options{Prefix: p, Delay: time.Millisecond})
		}},
		{"routed", []string{"netns-a", "netns-b", "netns-r", "veth", "configured", "qdisc", "up"}, func(p string) (*Bed, error) {
			return NewRouted(context.Background(), RoutedOptions{Prefix: p, RateBps: 1e8})
		}},
	}
	for _, c := range cases {
		for _, step := range c.steps {
			t.Run(c.name+"/"+step, func(t *testing.T) {
				testHook = func(s string) error {
					if s == step {
						return injected
					}
					return nil
				}
				t.Cleanup(func() { testHook = nil })
				var rnd [4]byte
				_, _ = rand.Read(rnd[:])
				prefix := "npf" + hex.EncodeToString(rnd[:])
				b, err := c.build(prefix)
				if err == nil {
					b.Close()
					t.Fatal("constructor succeeded despite the injected failure")
				}
				if !errors.Is(err, injected) {
					t.Errorf("error %v does not wrap the injected failure", err)
				}
				for _, n := range []string{prefix + "-a", prefix + "-b", prefix + "-r"} {
					if _, err := os.Lstat(filepath.Join(NetnsDir, n)); err == nil {
						t.Errorf("%s left behind after failing at %s", n, step)
						_ = deleteNamed(n)
					}
				}
			})
		}
	}
}

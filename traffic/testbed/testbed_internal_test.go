package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/netprof/netprof/internal/kerneltest"
)

// A failure after any step of New removes everything created so far.
func TestNewRollsBack(t *testing.T) {
	if err := Supported(); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	injected := errors.New("injected failure")
	for _, step := range []string{"netns-a", "netns-b", "veth", "configured", "up"} {
		t.Run(step, func(t *testing.T) {
			testHook = func(s string) error {
				if s == step {
					return injected
				}
				return nil
			}
			var rnd [4]byte
			_, _ = rand.Read(rnd[:])
			prefix := "npf" + hex.EncodeToString(rnd[:])
			t.Cleanup(func() {
				testHook = nil
				_, _ = Cleanup(prefix)
			})
			b, err := New(context.Background(), Options{Prefix: prefix})
			if err == nil {
				b.Close()
				t.Fatal("New succeeded despite the injected failure")
			}
			if !errors.Is(err, injected) {
				t.Errorf("error %v does not wrap the injected failure", err)
			}
			for _, n := range []string{prefix + "-a", prefix + "-b"} {
				if _, err := os.Lstat(filepath.Join(NetnsDir, n)); err == nil {
					t.Errorf("%s left behind after failing at %s", n, step)
				}
			}
		})
	}
}

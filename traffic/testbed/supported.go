package testbed

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/osthread"
)

var (
	supportedOnce sync.Once
	supportedErr  error
)

// Supported reports whether this process can build test beds: it must be
// root and able to create a network namespace (probed once per process with
// unshare(CLONE_NEWNET) on a throwaway thread). The error says why not and
// wraps unix.EPERM when namespace creation is forbidden.
func Supported() error {
	supportedOnce.Do(func() { supportedErr = probe() })
	return supportedErr
}

func probe() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root (euid %d)", os.Geteuid())
	}
	var err error
	// The thread ends with the call, taking the throwaway namespace with
	// it (never the main thread, which /proc/self shows).
	osthread.Disposable(func() {
		err = unix.Unshare(unix.CLONE_NEWNET)
		if errors.Is(err, unix.EPERM) {
			err = fmt.Errorf("cannot create a network namespace: %w", err)
		} else if err != nil {
			err = fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
	})
	return err
}

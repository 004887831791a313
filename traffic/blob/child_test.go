package blob_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// childEnv makes the test binary serve one synthetic blob (bench/blob.bin
// of the given size) instead of running tests: the benchmark's server runs
// in its own process, so getrusage(RUSAGE_SELF) measures the client alone.
const childEnv = "NETPROF_BLOBTEST_CHILD_SIZE"

// childDirEnv is where the child keeps the blob's file (tmpfs preferred).
const childDirEnv = "NETPROF_BLOBTEST_CHILD_DIR"

// writeSynthetic writes blob.Synthetic{Size: size} to path.
func writeSynthetic(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.NewSectionReader(blob.Synthetic{Size: size}, 0, size))
	return errors.Join(err, f.Close())
}

// serveChild serves (with sendfile, from a file holding the synthetic
// content) until its stdin closes (the parent ended).
func serveChild() {
	size, err := strconv.ParseInt(os.Getenv(childEnv), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad", childEnv, err)
		os.Exit(2)
	}
	s, err := blobtest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp(os.Getenv(childDirEnv), "netprof-blobsrv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	path := filepath.Join(dir, "blob.bin")
	err = writeSynthetic(path, size)
	if err == nil {
		err = s.PutFile("bench", "blob.bin", path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Println(s.URL + "/bench/blob.bin")
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or error: either way, stop
	s.Close()
	os.RemoveAll(dir)
	os.Exit(0)
}

// startChild starts the server process and returns the blob URL; the
// process is stopped (stdin closed, then killed by its PID after 5 s) at
// cleanup.
func startChild(b testing.TB, size int64, dir string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", childEnv, size), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			cmd.Wait() //nolint:errcheck // its exit status does not matter
		}()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // it may be gone already
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("blob server process: %v", err)
	}
	return strings.TrimSpace(line)
}

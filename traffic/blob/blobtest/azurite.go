package blobtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// EnvRequireAzurite is the environment variable that turns "Azurite is
// not installed" skips into failures (set to 1 by .ci/run, which installs
// it with `npm install -g azurite@3.35.0`).
const EnvRequireAzurite = "NETPROF_REQUIRE_AZURITE"

// AzuriteCommand is the emulator's Blob service command.
const AzuriteCommand = "azurite-blob"

// Azurite is a running azurite-blob on 127.0.0.1 with in-memory
// persistence.
type Azurite struct {
	// Endpoint is the account endpoint,
	// http://127.0.0.1:PORT/devstoreaccount1.
	Endpoint string
	// Account and Key are DevAccount and DevKey.
	Account, Key string
	cmd          *exec.Cmd
	out          *lockedBuffer
}

// ConnectionString returns a connection string for the emulator.
func (a *Azurite) ConnectionString() string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;",
		a.Account, a.Key, a.Endpoint)
}

// Env returns a getenv function giving the emulator's account and key as
// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, and "" for anything else.
func (a *Azurite) Env() func(string) string {
	return func(k string) string {
		switch k {
		case "AZURE_STORAGE_ACCOUNT":
			return a.Account
		case "AZURE_STORAGE_KEY":
			return a.Key
		}
		return ""
	}
}

// SkipUnlessRequired skips t with reason, or fails it when
// NETPROF_REQUIRE_AZURITE=1.
func SkipUnlessRequired(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(EnvRequireAzurite) == "1" {
		t.Fatalf("Azurite test cannot run (%s) but %s=1", reason, EnvRequireAzurite)
	}
	t.Skip(reason)
}

// StartAzurite starts azurite-blob on a free loopback port with in-memory
// persistence, waits until it accepts connections, and stops it (by its
// PID) when the test ends. It skips the test when azurite-blob is not
// installed (see SkipUnlessRequired).
func StartAzurite(t testing.TB) *Azurite {
	t.Helper()
	bin, err := exec.LookPath(AzuriteCommand)
	if err != nil {
		SkipUnlessRequired(t, "azurite-blob not installed (npm install -g azurite@3.35.0)")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port),
		"--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry", "--silent")
	cmd.Dir = dir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", AzuriteCommand, err)
	}
	a := &Azurite{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/%s", port, DevAccount),
		Account: DevAccount, Key: DevKey, cmd: cmd, out: out}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited already
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return a
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("%s exited before listening (%v): %s", AzuriteCommand, werr, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 60 s: %s", AzuriteCommand, addr, out.String())
		}
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects a child's output for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

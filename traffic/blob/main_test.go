package blob_test

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		serveChild() // the benchmark's server process
		return
	}
	leakcheck.Main(m)
}

// env returns a getenv over a fixed map.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// devEnv is the development account's shared key, as the environment
// would give it.
var devEnv = env(map[string]string{blob.EnvAccount: blobtest.DevAccount, blob.EnvKey: blobtest.DevKey})

// fastRetries retries quickly so fault tests take milliseconds.
func fastRetries(o blob.Options) blob.Options {
	o.RetryDelay, o.MaxRetryDelay = time.Millisecond, 5*time.Millisecond
	return o
}

func newClient(t testing.TB, getenv func(string) string, o blob.Options) *blob.Client {
	t.Helper()
	creds, err := blob.CredentialsFromEnv(blob.AuthAuto, getenv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := blob.NewClient(creds, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newServer(t testing.TB) *blobtest.Server {
	t.Helper()
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func target(t testing.TB, raw string) blob.Target {
	t.Helper()
	tg, err := blob.ParseTarget(raw)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// pull prepares and runs a pull, closing the transfer.
func pull(t testing.TB, c *blob.Client, cfg blob.PullConfig) (*blob.Transfer, error) {
	t.Helper()
	x, err := c.PreparePull(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	err = x.Run(context.Background())
	if cerr := x.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return x, err
}

// mustPush runs a push to completion, failing the test on any error.
func mustPush(t testing.TB, c *blob.Client, cfg blob.PushConfig) *blob.Transfer {
	t.Helper()
	x, err := c.PreparePush(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	return x
}

func sumStats(x *blob.Transfer) blob.Stats {
	var s blob.Stats
	for _, ts := range x.Stats() {
		s = s.Add(ts.Stats)
	}
	return s
}

func shaFile(t testing.TB, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func shaSynthetic(t testing.TB, size int64) [32]byte {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(blob.Synthetic{Size: size}, 0, size)); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

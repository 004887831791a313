package blob_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// push prepares and runs a push, closing the transfer.
func push(t testing.TB, c *blob.Client, cfg blob.PushConfig) *blob.Transfer {
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

// A push to a container that does not exist creates it (like azcopy) and
// says so; the existence check's 404 is an expected answer, not an HTTP
// error of the transfer: a clean push counts 0 other errors. A second push
// to the same container finds it (404 BlobNotFound, expected too), and a
// third replaces the blob (200).
func TestPushCreatesContainer(t *testing.T) {
	s := newServer(t)
	o := blob.DefaultOptions()
	o.Concurrency, o.BlockSize = 3, 1<<20
	c := newClient(t, devEnv, o)
	data := make([]byte, 5<<20+17)
	rand.Read(data)
	src := filepath.Join(t.TempDir(), "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.HasContainer("nptest") {
		t.Fatal("container exists before the push")
	}
	x := push(t, c, blob.PushConfig{Targets: []blob.Target{target(t, s.URL+"/nptest/test1.bin")}, File: src})
	if !s.HasContainer("nptest") {
		t.Fatal("the push did not create the container")
	}
	if got, ok := s.Blob("nptest", "test1.bin"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("pushed blob: %d bytes (stored %v), want the %d bytes of the file", len(got), ok, len(data))
	}
	const blocks = 6
	st := sumStats(x)
	// Requests: create container (201) + 6 Put Block + Put Block List; the
	// HEAD's 404 ContainerNotFound is Expected.
	if st.Requests != 2+blocks || st.HTTP2xx != 2+blocks || st.HTTPOther != 0 || st.Expected != 1 || st.Bytes != uint64(len(data)) {
		t.Errorf("push counted %+v; want %d requests, all 2xx, 0 other, 1 expected 404, %d bytes", st, 2+blocks, len(data))
	}
	if n := s.Count(http.StatusNotFound, "ContainerNotFound"); n != 1 {
		t.Errorf("server sent %d 404 ContainerNotFound, want the one existence check", n)
	}
	if n := s.Count(http.StatusCreated, ""); n != 2+blocks {
		t.Errorf("server answered %d 201s, want container + %d blocks + block list", n, blocks)
	}
	if p := x.Prepared(); len(p) != 1 || !p[0].CreatedContainer || p[0].BlobExisted {
		t.Errorf("Prepared %+v, want the container created, no blob", p)
	}
	if cc := x.CreatedContainers(); len(cc) != 1 || cc[0] != s.URL+"/nptest" {
		t.Errorf("CreatedContainers %q, want [%s/nptest]", cc, s.URL)
	}

	// Same container, new blob; then the same blob again.
	for i, want := range []blob.Prep{{}, {BlobExisted: true}} {
		s.ResetStats()
		x = push(t, c, blob.PushConfig{Targets: []blob.Target{target(t, s.URL+"/nptest/test2.bin")}, Size: 3 << 20})
		st = sumStats(x)
		wantExpected, wantReq := uint64(1), uint64(3+1)
		if want.BlobExisted {
			wantExpected, wantReq = 0, 1+3+1 // HEAD 200 + 3 blocks + list
		}
		if st.Requests != wantReq || st.HTTPOther != 0 || st.Expected != wantExpected {
			t.Errorf("push %d: %+v; want %d requests, 0 other, %d expected", i+2, st, wantReq, wantExpected)
		}
		if p := x.Prepared(); p[0] != want || len(x.CreatedContainers()) != 0 {
			t.Errorf("push %d: Prepared %+v, created %q; want %+v and none created", i+2, p, x.CreatedContainers(), want)
		}
		if s.Count(http.StatusCreated, "") != 3+1 || s.Count(http.StatusConflict, "") != 0 {
			t.Errorf("push %d: server answered %d 201s, %d 409s; want 4 and none (no container create)",
				i+2, s.Count(http.StatusCreated, ""), s.Count(http.StatusConflict, ""))
		}
	}
	if got, ok := s.Blob("nptest", "test2.bin"); !ok || int64(len(got)) != 3<<20 {
		t.Errorf("test2.bin: %d bytes, want %d", len(got), 3<<20)
	}
}

// Two URLs in one new container: it is created once; the second target's
// check finds it (404 BlobNotFound, expected).
func TestPushTwoTargetsNewContainer(t *testing.T) {
	s := newServer(t)
	o := blob.DefaultOptions()
	o.BlockSize = 1 << 20
	c := newClient(t, devEnv, o)
	x := push(t, c, blob.PushConfig{Targets: []blob.Target{target(t, s.URL+"/fresh/a"), target(t, s.URL+"/fresh/b")}, Size: 2<<20 + 1})
	st := sumStats(x)
	if st.HTTPOther != 0 || st.Expected != 2 || st.Requests != 1+2*(3+1) {
		t.Errorf("counted %+v; want 9 requests (create + 2 × (3 blocks + list)), 0 other, 2 expected", st)
	}
	if got := x.CreatedContainers(); len(got) != 1 || s.Count(http.StatusConflict, "") != 0 {
		t.Errorf("created %q with %d 409s; want one create", got, s.Count(http.StatusConflict, ""))
	}
	for _, n := range []string{"a", "b"} {
		if got, ok := s.Blob("fresh", n); !ok || len(got) != 2<<20+1 {
			t.Errorf("blob %s: %d bytes", n, len(got))
		}
	}
}

// Another client creates the container between the existence check and
// the create: the 409 ContainerAlreadyExists is expected, the push goes on
// and reports no container created by it.
func TestPushContainerCreateRace(t *testing.T) {
	s := newServer(t)
	// In front of s: after answering the existence check, another
	// client creates the container.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r)
		if r.Method == http.MethodHead && r.URL.Query().Get("restype") == "" {
			s.CreateContainer("racy")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String() + "/" + blobtest.DevAccount
	o := blob.DefaultOptions()
	o.BlockSize = 1 << 20
	c := newClient(t, devEnv, o)
	x := push(t, c, blob.PushConfig{Targets: []blob.Target{target(t, base+"/racy/x")}, Size: 1 << 20})
	st := sumStats(x)
	if s.Count(http.StatusConflict, "ContainerAlreadyExists") != 1 {
		t.Fatalf("the race did not happen: %d 409s", s.Count(http.StatusConflict, "ContainerAlreadyExists"))
	}
	if st.HTTPOther != 0 || st.Expected != 2 || st.Requests != 2 {
		t.Errorf("counted %+v; want 2 requests (block + list), 0 other, 2 expected (404 and 409)", st)
	}
	if got := x.CreatedContainers(); len(got) != 0 {
		t.Errorf("CreatedContainers %q: another client created it", got)
	}
	if got, ok := s.Blob("racy", "x"); !ok || len(got) != 1<<20 {
		t.Errorf("blob: %d bytes", len(got))
	}
}

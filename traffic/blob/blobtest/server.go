// Package blobtest holds test helpers for Azure Blob clients: a small
// fault-injecting Blob server that answers the ranged-download and
// block-upload subset of the REST API on loopback, and a launcher for the
// Azurite emulator.
package blobtest

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netprof/netprof/traffic/blob"
)

// DevAccount and DevKey are the published development-storage account and
// key that Azurite accepts (not a secret).
const (
	DevAccount = "devstoreaccount1"
	DevKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Fault decides the answer to the n-th data request (GET, 1-based, in
// arrival order): status 0 serves it; otherwise the server answers status
// with x-ms-error-code code and an XML error body.
type Fault func(n int64, r *http.Request) (status int, code string)

// BusyEvery answers every k-th GET with 503 ServerBusy.
func BusyEvery(k int64) Fault {
	return func(n int64, _ *http.Request) (int, string) {
		if n%k == 0 {
			return http.StatusServiceUnavailable, "ServerBusy"
		}
		return 0, ""
	}
}

// AlwaysBusy answers every GET with 503 ServerBusy.
func AlwaysBusy() Fault {
	return func(int64, *http.Request) (int, string) { return http.StatusServiceUnavailable, "ServerBusy" }
}

// Server is a loopback Blob endpoint for account DevAccount. It accepts
// any credentials. HEAD answers Get Blob Properties; GET answers Get Blob,
// whole or with an x-ms-range / Range header (206 + Content-Range), and
// honours If-Match. With ?restype=container, PUT creates a container (201,
// or 409 ContainerAlreadyExists), HEAD/GET answer Get Container
// Properties and DELETE deletes it with its blobs. PUT ?comp=block stages
// a block, PUT ?comp=blocklist commits the <Latest> blocks listed (400
// InvalidBlockList for an unknown one), DELETE deletes a blob. Other
// requests get 501.
type Server struct {
	// URL is the account endpoint, http://127.0.0.1:PORT/devstoreaccount1;
	// blob URLs are URL + "/CONTAINER/BLOB".
	URL string

	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu    sync.Mutex
	blobs map[string]*object
	// staged holds uncommitted blocks by CONTAINER/NAME and block ID.
	staged map[string]map[string][]byte
	fault  Fault
	counts map[string]int64
	sizes  map[int64]int64

	gets     atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

type object struct {
	data []byte // nil for a synthetic or file blob
	path string // a file blob's content
	size int64
	etag string
}

// NewServer starts a Server on 127.0.0.1 with a free port. Close stops it.
func NewServer() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("blobtest: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/" + DevAccount, ln: ln, done: make(chan struct{}),
		blobs: map[string]*object{}, staged: map[string]map[string][]byte{}, counts: map[string]int64{}, sizes: map[int64]int64{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln) //nolint:errcheck // ErrServerClosed after Close
	}()
	return s, nil
}

// Close stops the server, closes every connection and waits for it.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// Put stores data as CONTAINER/NAME.
func (s *Server) Put(container, name string, data []byte) {
	s.put(container, name, &object{data: data, size: int64(len(data))})
}

// PutSynthetic stores a blob of size bytes whose content is
// blob.Synthetic{Size: size}, generated as it is served.
func (s *Server) PutSynthetic(container, name string, size int64) {
	s.put(container, name, &object{size: size})
}

// PutFile stores the content of the file at path (read at each GET, sent
// with sendfile: the cheapest server for client benchmarks).
func (s *Server) PutFile(container, name, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("blobtest: %w", err)
	}
	s.put(container, name, &object{path: path, size: st.Size()})
	return nil
}

func (s *Server) put(container, name string, o *object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.etag = fmt.Sprintf("\"0x8D%013X\"", time.Now().UnixNano()&0xFFFFFFFFFFFFF)
	s.blobs[container+"/"+name] = o
	s.blobs[container+"/"] = &object{} // the container exists
}

// CreateContainer creates an empty container (nothing if it exists).
func (s *Server) CreateContainer(container string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blobs[container+"/"] == nil {
		s.blobs[container+"/"] = &object{}
	}
}

// HasContainer reports whether the container exists.
func (s *Server) HasContainer(container string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blobs[container+"/"] != nil
}

// Blob returns the content of CONTAINER/NAME when it was stored with Put
// or pushed (Put Block List); ok is false for a missing, synthetic or
// file blob.
func (s *Server) Blob(container, name string) (data []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.blobs[container+"/"+name]
	if o == nil || name == "" || o.data == nil {
		return nil, false
	}
	return o.data, true
}

// SetFault sets the fault schedule (nil: none) and restarts the GET
// sequence at 1.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
	s.gets.Store(0)
}

// Count returns how many responses the server sent with status and, when
// code is not empty, that x-ms-error-code.
func (s *Server) Count(status int, code string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		var n int64
		prefix := strconv.Itoa(status) + " "
		for k, v := range s.counts {
			if strings.HasPrefix(k, prefix) {
				n += v
			}
		}
		return n
	}
	return s.counts[fmt.Sprintf("%d %s", status, code)]
}

// RangeSizes returns, per range length in bytes, how many ranged GETs
// were answered 206.
func (s *Server) RangeSizes() map[int64]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]int64, len(s.sizes))
	for k, v := range s.sizes {
		out[k] = v
	}
	return out
}

// MaxInFlight returns the most GETs that were being answered at once.
func (s *Server) MaxInFlight() int64 { return s.maxIn.Load() }

// ResetStats zeroes the counts, range sizes and MaxInFlight.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts, s.sizes = map[string]int64{}, map[int64]int64{}
	s.maxIn.Store(0)
}

func (s *Server) record(status int, code string, rangeLen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[fmt.Sprintf("%d %s", status, code)]++
	if status == http.StatusPartialContent {
		s.sizes[rangeLen]++
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("x-ms-request-id", "00000000-0000-0000-0000-000000000000")
	h.Set("x-ms-version", r.Header.Get("x-ms-version"))
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	path := strings.TrimPrefix(r.URL.Path, "/"+DevAccount+"/")
	container, name, _ := strings.Cut(path, "/")
	s.mu.Lock()
	_, cok := s.blobs[container+"/"]
	o := s.blobs[container+"/"+name]
	fault := s.fault
	s.mu.Unlock()
	q := r.URL.Query()
	switch {
	case q.Get("restype") == "container":
		s.serveContainer(w, r, container, cok)
		return
	case r.Method == http.MethodPut || r.Method == http.MethodDelete:
		s.serveWrite(w, r, container, name, cok, q.Get("comp"))
		return
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		s.fail(w, r, http.StatusNotImplemented, "UnsupportedHttpVerb")
		return
	}
	if r.Method == http.MethodGet {
		in := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for m := s.maxIn.Load(); in > m && !s.maxIn.CompareAndSwap(m, in); m = s.maxIn.Load() {
		}
		if fault != nil {
			if st, code := fault(s.gets.Add(1), r); st != 0 {
				s.fail(w, r, st, code)
				return
			}
		}
	}
	switch {
	case !cok:
		s.fail(w, r, http.StatusNotFound, "ContainerNotFound")
		return
	case o == nil || name == "":
		s.fail(w, r, http.StatusNotFound, "BlobNotFound")
		return
	case r.Header.Get("If-Match") != "" && r.Header.Get("If-Match") != o.etag:
		s.fail(w, r, http.StatusPreconditionFailed, "ConditionNotMet")
		return
	}
	h.Set("ETag", o.etag)
	h.Set("Last-Modified", "Mon, 02 Jan 2026 03:04:05 GMT")
	h.Set("x-ms-blob-type", "BlockBlob")
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "application/octet-stream")
	if r.Method == http.MethodHead {
		h.Set("Content-Length", strconv.FormatInt(o.size, 10))
		w.WriteHeader(http.StatusOK)
		s.record(http.StatusOK, "", 0)
		return
	}
	s.serveGet(w, r, o)
}

// serveContainer answers Create Container (PUT), Get Container Properties
// (HEAD, GET) and Delete Container (DELETE).
func (s *Server) serveContainer(w http.ResponseWriter, r *http.Request, container string, exists bool) {
	switch {
	case r.Method == http.MethodPut && exists:
		s.fail(w, r, http.StatusConflict, "ContainerAlreadyExists")
	case r.Method == http.MethodPut:
		s.CreateContainer(container)
		s.ok(w, http.StatusCreated)
	case !exists:
		s.fail(w, r, http.StatusNotFound, "ContainerNotFound")
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		s.ok(w, http.StatusOK)
	case r.Method == http.MethodDelete:
		s.mu.Lock()
		for k := range s.blobs {
			if strings.HasPrefix(k, container+"/") {
				delete(s.blobs, k)
			}
		}
		for k := range s.staged {
			if strings.HasPrefix(k, container+"/") {
				delete(s.staged, k)
			}
		}
		s.mu.Unlock()
		s.ok(w, http.StatusAccepted)
	default:
		s.fail(w, r, http.StatusNotImplemented, "UnsupportedHttpVerb")
	}
}

// maxBlock is the largest block the server stages.
const maxBlock = 256 << 20

// serveWrite answers Put Block, Put Block List and Delete Blob.
func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request, container, name string, exists bool, comp string) {
	key := container + "/" + name
	switch {
	case !exists:
		s.fail(w, r, http.StatusNotFound, "ContainerNotFound")
	case name == "":
		s.fail(w, r, http.StatusBadRequest, "InvalidUri")
	case r.Method == http.MethodDelete:
		s.mu.Lock()
		_, found := s.blobs[key]
		delete(s.blobs, key)
		delete(s.staged, key)
		s.mu.Unlock()
		if !found {
			s.fail(w, r, http.StatusNotFound, "BlobNotFound")
			return
		}
		s.ok(w, http.StatusAccepted)
	case comp == "block":
		id := r.URL.Query().Get("blockid")
		data, err := io.ReadAll(io.LimitReader(r.Body, maxBlock+1))
		if err != nil || id == "" || len(data) > maxBlock {
			s.fail(w, r, http.StatusBadRequest, "InvalidInput")
			return
		}
		s.mu.Lock()
		if s.staged[key] == nil {
			s.staged[key] = map[string][]byte{}
		}
		s.staged[key][id] = data
		s.mu.Unlock()
		s.ok(w, http.StatusCreated)
	case comp == "blocklist":
		var list struct {
			Latest []string `xml:"Latest"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err == nil {
			err = xml.Unmarshal(body, &list)
		}
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, "InvalidXmlDocument")
			return
		}
		s.mu.Lock()
		var data []byte
		for _, id := range list.Latest {
			b, ok := s.staged[key][id]
			if !ok {
				s.mu.Unlock()
				s.fail(w, r, http.StatusBadRequest, "InvalidBlockList")
				return
			}
			data = append(data, b...)
		}
		delete(s.staged, key)
		s.mu.Unlock()
		if data == nil {
			data = []byte{}
		}
		s.Put(container, name, data)
		s.mu.Lock()
		w.Header().Set("ETag", s.blobs[key].etag)
		s.mu.Unlock()
		s.ok(w, http.StatusCreated)
	default:
		s.fail(w, r, http.StatusNotImplemented, "UnsupportedHttpVerb")
	}
}

// ok answers status with an empty body, and counts it.
func (s *Server) ok(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
	s.record(status, "", 0)
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, o *object) {
	off, n, ranged, err := parseRange(r, o.size)
	if err != nil {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", o.size))
		s.fail(w, r, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		return
	}
	h := w.Header()
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("x-ms-blob-content-length", strconv.FormatInt(o.size, 10))
	status := http.StatusOK
	if ranged {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, o.size))
	}
	w.WriteHeader(status)
	s.record(status, "", n)
	switch {
	case o.data != nil:
		w.Write(o.data[off : off+n]) //nolint:errcheck // the client went away
		return
	case o.path != "":
		serveFile(w, o.path, off, n)
		return
	}
	writeSynthetic(w, blob.Synthetic{Size: o.size}, off, n)
}

// serveFile copies n bytes at off of the file to w; net/http sends them
// with sendfile(2).
func serveFile(w io.Writer, path string, off, n int64) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return
	}
	io.CopyN(w, f, n) //nolint:errcheck // the client went away
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, blob.MaxPatternRead); return &b }}

func writeSynthetic(w io.Writer, src blob.Synthetic, off, n int64) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for n > 0 {
		k, _ := src.ReadAt(buf[:min(int64(len(buf)), n)], off)
		if _, err := w.Write(buf[:k]); err != nil || k == 0 {
			return
		}
		off, n = off+int64(k), n-int64(k)
	}
}

// parseRange reads x-ms-range (or Range): "bytes=A-B" or "bytes=A-".
func parseRange(r *http.Request, size int64) (off, n int64, ranged bool, err error) {
	v := r.Header.Get("x-ms-range")
	if v == "" {
		v = r.Header.Get("Range")
	}
	if v == "" {
		return 0, size, false, nil
	}
	spec, ok := strings.CutPrefix(v, "bytes=")
	a, b, ok2 := strings.Cut(spec, "-")
	if !ok || !ok2 {
		return 0, 0, false, errors.New("bad range")
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start >= size {
		return 0, 0, false, errors.New("bad range")
	}
	end := size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return 0, 0, false, errors.New("bad range")
		}
		end = min(end, size-1)
	}
	return start, end - start + 1, true, nil
}

// fail answers status with x-ms-error-code code and an XML error body (no
// body for HEAD), and counts it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code string) {
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code><Message>blobtest: %s</Message></Error>", code, code)
	h := w.Header()
	h.Set("x-ms-error-code", code)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		h.Del("Content-Length")
	}
	w.WriteHeader(status)
	s.record(status, code, 0)
	if r.Method != http.MethodHead {
		io.WriteString(w, body) //nolint:errcheck // the client went away
	}
}

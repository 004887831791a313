package blob

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Limits of Azure block blobs (service version 2019-12-12 and later).
const (
	// MaxBlocks is the most blocks one block blob holds.
	MaxBlocks = 50_000
	// MaxBlockSize is the largest block Put Block accepts (4000 MiB).
	MaxBlockSize = 4000 << 20
)

// Defaults for Options.
const (
	DefaultConcurrency = 16
	DefaultBlockSize   = 8 << 20
	DefaultMaxRetries  = 3
	DefaultRetryDelay  = 800 * time.Millisecond
	DefaultMaxDelay    = 60 * time.Second
)

// Options are the transfer settings shared by pull, push and bench.
type Options struct {
	// Concurrency is the number of blocks in flight (parallel requests).
	Concurrency int
	// BlockSize is the bytes per ranged GET (pull) or staged block (push).
	BlockSize int64
	// MaxRetries is how many times the SDK's retry policy repeats a
	// failed attempt (408, 429, 500, 502, 503, 504 or no response);
	// 0 means no retries. Maps to policy.RetryOptions.MaxRetries.
	MaxRetries int
	// RetryDelay is the base of the exponential back-off (the delay
	// before retry k is (2^k - 1) × RetryDelay, ±jitter); MaxRetryDelay
	// caps it. TryTimeout bounds one attempt (0: no limit).
	RetryDelay, MaxRetryDelay, TryTimeout time.Duration
	// Log receives warnings; nil means slog.Default.
	Log *slog.Logger
}

// DefaultOptions returns the defaults: 16 requests of 8 MiB in flight, 3
// retries from 800 ms.
func DefaultOptions() Options {
	return Options{Concurrency: DefaultConcurrency, BlockSize: DefaultBlockSize,
		MaxRetries: DefaultMaxRetries, RetryDelay: DefaultRetryDelay, MaxRetryDelay: DefaultMaxDelay}
}

// Validate returns an error listing every invalid field.
func (o Options) Validate() error {
	var errs []error
	if o.Concurrency < 1 || o.Concurrency > 4096 {
		errs = append(errs, fmt.Errorf("invalid concurrency %d: must be 1..4096", o.Concurrency))
	}
	if o.BlockSize < 1 || o.BlockSize > MaxBlockSize {
		errs = append(errs, fmt.Errorf("invalid block size %d: must be 1 B..4000 MiB", o.BlockSize))
	}
	if o.MaxRetries < 0 || o.MaxRetries > 1000 {
		errs = append(errs, fmt.Errorf("invalid max retries %d: must be 0..1000", o.MaxRetries))
	}
	if o.RetryDelay < 0 || o.MaxRetryDelay < 0 || o.TryTimeout < 0 {
		errs = append(errs, errors.New("retry delays and try timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// retry maps Options to azcore's retry options (whose 0 means "default").
func (o Options) retry() policy.RetryOptions {
	r := policy.RetryOptions{MaxRetries: int32(o.MaxRetries), RetryDelay: o.RetryDelay,
		MaxRetryDelay: o.MaxRetryDelay, TryTimeout: o.TryTimeout}
	if o.MaxRetries == 0 {
		r.MaxRetries = -1 // azcore: negative means none
	}
	if o.RetryDelay == 0 {
		r.RetryDelay = -1
	}
	if r.MaxRetryDelay == 0 {
		r.MaxRetryDelay = DefaultMaxDelay
	}
	return r
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// Client moves data with one HTTP transport shared by every target:
// connections are kept alive and reused across blocks (up to Concurrency
// idle connections per host). Close it to close them.
type Client struct {
	creds *Credentials
	opts  Options
	tr    *http.Transport
	hc    *http.Client
}

// NewClient returns a Client using creds (see CredentialsFromEnv).
func NewClient(creds *Credentials, opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if creds == nil {
		return nil, fmt.Errorf("%w: nil credentials", ErrNoCredentials)
	}
	tr := NewTransport(opts.Concurrency)
	return &Client{creds: creds, opts: opts, tr: tr, hc: &http.Client{Transport: tr}}, nil
}

// NewTransport returns the HTTP/1.1 transport a Client uses: keep-alive,
// conns idle connections per host, no compression, a 256 KiB write
// buffer (request bodies go out in large writes) and the default 4 KiB
// read buffer (response bodies are read straight into the caller's
// buffer, bypassing it).
func NewTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   conns + 4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		DisableCompression:    true,
		WriteBufferSize:       256 << 10,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
}

// Options returns the client's options.
func (c *Client) Options() Options { return c.opts }

// Credentials returns the client's credentials (for Redact).
func (c *Client) Credentials() *Credentials { return c.creds }

// Close closes idle connections. It is idempotent; in-flight requests
// are not interrupted.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// ClientOptions returns the azcore options of every SDK client this
// Client makes: its transport, its retry options, and counter (when not
// nil) as a per-retry policy.
func (c *Client) ClientOptions(counter *Counter) azcore.ClientOptions {
	co := azcore.ClientOptions{Transport: c.hc, Retry: c.opts.retry()}
	co.Telemetry.ApplicationID = "netprof"
	if counter != nil {
		co.PerRetryPolicies = []policy.Policy{counter}
	}
	return co
}

// endpoint is one target with its SDK client and counter.
type endpoint struct {
	t   Target
	bb  *blockblob.Client
	cnt *Counter
	// etag is the blob's ETag when prepared (pull: If-Match on every GET).
	etag *azcore.ETag
	// prep is what preparing found.
	prep Prep
}

// Prep is what preparing a transfer found out about one target.
type Prep struct {
	// BlobExisted: push found the blob (and replaces it).
	BlobExisted bool
	// CreatedContainer: push created the target's container, which did
	// not exist.
	CreatedContainer bool
}

// open makes the SDK client for blob target t, counting into cnt.
func (c *Client) open(t Target, cnt *Counter) (*endpoint, error) {
	key, tok, u, err := c.creds.authFor(t)
	if err != nil {
		return nil, err
	}
	o := &blockblob.ClientOptions{ClientOptions: c.ClientOptions(cnt)}
	var bb *blockblob.Client
	switch {
	case key != nil:
		bb, err = blockblob.NewClientWithSharedKeyCredential(u, key, o)
	case tok != nil:
		bb, err = blockblob.NewClient(u, tok, o)
	default:
		bb, err = blockblob.NewClientWithNoCredential(u, o)
	}
	if err != nil {
		return nil, fmt.Errorf("client for %s: %s", t.Display, c.creds.Redact(err.Error()))
	}
	return &endpoint{t: t, bb: bb, cnt: cnt}, nil
}

// ContainerClient returns an SDK client for container target t (see
// ParseContainer), counting into counter when it is not nil.
func (c *Client) ContainerClient(t Target, counter *Counter) (*container.Client, error) {
	key, tok, u, err := c.creds.authFor(t)
	if err != nil {
		return nil, err
	}
	if t.Blob != "" { // a prefix: the client wants the container URL
		ct, perr := parse(u)
		if perr != nil {
			return nil, perr
		}
		if u, err = ct.containerURL(); err != nil {
			return nil, err
		}
	}
	o := &container.ClientOptions{ClientOptions: c.ClientOptions(counter)}
	var cc *container.Client
	switch {
	case key != nil:
		cc, err = container.NewClientWithSharedKeyCredential(u, key, o)
	case tok != nil:
		cc, err = container.NewClient(u, tok, o)
	default:
		cc, err = container.NewClientWithNoCredential(u, o)
	}
	if err != nil {
		return nil, fmt.Errorf("client for %s: %s", t.Display, c.creds.Redact(err.Error()))
	}
	return cc, nil
}

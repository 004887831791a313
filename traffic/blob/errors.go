package blob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// RequestError is a Blob operation that failed, after its retries. Its
// message is one line naming the operation, the blob (without SAS), the
// HTTP status and x-ms-error-code (or the network error) and the number of
// attempts; it never contains a secret. Unwrap returns the SDK's error
// (an *azcore.ResponseError when the service answered).
type RequestError struct {
	// Op is what was attempted, e.g. "get bytes=0-8388607".
	Op string
	// URL is the blob or container URL without its SAS.
	URL string
	// Status is the HTTP status of the last attempt; 0 without a response.
	Status int
	// Code is the last response's x-ms-error-code.
	Code string
	// Attempts is how many HTTP attempts the operation made.
	Attempts int
	Err      error
}

func (e *RequestError) Error() string {
	return e.Op + " " + e.URL + ": " + e.detail()
}

// detail is the message after "op url: ".
func (e *RequestError) detail() string {
	var b strings.Builder
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		} else if t := http.StatusText(e.Status); t != "" {
			b.WriteString(" " + t)
		}
		if h := hint(e.Status, e.Code); h != "" {
			b.WriteString(" (" + h + ")")
		}
	case errors.Is(e.Err, context.Canceled):
		b.WriteString("canceled")
	case errors.Is(e.Err, context.DeadlineExceeded):
		b.WriteString("timed out")
	default:
		b.WriteString(transportError(e.Err))
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ", after %d attempts", e.Attempts)
	}
	return b.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

// hint explains the statuses a user can act on.
func hint(status int, code string) string {
	switch {
	case status == http.StatusForbidden:
		return "the service refused the credentials: check the key, connection string or SAS"
	case code == "ContainerNotFound":
		return "the container does not exist"
	case code == "BlobNotFound":
		return "the blob does not exist"
	case status == http.StatusServiceUnavailable:
		return "the service is throttling: lower --concurrency or raise --max-retries"
	}
	return ""
}

// transportError returns a one-line description of a request that got no
// response, without the request URL (which may hold a SAS).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if err == nil {
		return "no response"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if strings.Contains(msg, "://") {
		// Some errors quote the URL; print only the tail after it.
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	return "no response: " + msg
}

// newRequestError wraps err from an SDK call on t; nil stays nil.
func newRequestError(op string, t Target, o *opStats, err error) error {
	if err == nil {
		return nil
	}
	e := &RequestError{Op: op, URL: t.Display, Err: err}
	if o != nil {
		e.Attempts = int(o.attempts.Load())
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		e.Status, e.Code = re.StatusCode, re.ErrorCode
		if e.Code == "" && re.RawResponse != nil {
			e.Code = re.RawResponse.Header.Get("x-ms-error-code")
		}
	}
	return e
}

// IsCode reports whether err is a RequestError (or azcore.ResponseError)
// with x-ms-error-code code.
func IsCode(err error, code string) bool {
	var e *RequestError
	if errors.As(err, &e) {
		return e.Code == code
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == code
}

// Describe returns a one-line description of any error from an SDK call:
// "HTTP 403 AuthenticationFailed (hint)" when the service answered, the
// network error without the URL when it did not, else the first line of
// err's message. Pass the result through Credentials.Redact before
// printing it.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var e *RequestError
	if errors.As(err, &e) {
		return e.Error()
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return (&RequestError{Status: re.StatusCode, Code: re.ErrorCode, Err: err}).detail()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return transportError(err)
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

package main

// The wire format, described for client authors in README.md.
//
// Every message, in either direction, is one frame: a header that is a single
// line of JSON (an object, ended by "\n", at most maxHeader bytes) holding a
// "len" field, followed by exactly "len" raw bytes. Raw bytes carry what must
// not be re-encoded (values YAML, rendered manifests, error text), so a client
// never has to escape or unescape them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// protocolVersion changes whenever a client written against README.md would
// misread a frame.
const protocolVersion = 1

const (
	// maxHeader bounds one header line.
	maxHeader = 1 << 20
	// maxValues bounds the values YAML of one request.
	maxValues = 64 << 20
	// maxManifest bounds one rendered release, as strata bounds helm's
	// standard output.
	maxManifest = 64 << 20
)

// Kinds of failure a response can carry in "error_kind".
const (
	kindHelm     = "helm"      // helm itself failed; the body is its message
	kindRequest  = "request"   // the request was not well formed
	kindTimeout  = "timeout"   // the render ran past its deadline
	kindTooLarge = "too_large" // the manifest is larger than maxManifest
	kindInternal = "internal"  // the renderer failed (a recovered panic)
)

// errFraming means the input stream cannot be read as frames any more: the
// renderer stops reading, since it cannot find where the next frame starts.
var errFraming = errors.New("framing")

// requestHeader is the header of a render request; its body is the values YAML.
type requestHeader struct {
	ID          string   `json:"id"`
	Chart       string   `json:"chart"`
	Release     string   `json:"release"`
	Namespace   string   `json:"namespace"`
	KubeVersion string   `json:"kube_version"`
	APIVersions []string `json:"api_versions"`
	IncludeCRDs *bool    `json:"include_crds"`
	SkipTests   *bool    `json:"skip_tests"`
	TimeoutMS   int64    `json:"timeout_ms"`
	Len         int64    `json:"len"`
}

// request is one render to do, as read from the wire.
type request struct {
	ID          string
	Chart       string
	Release     string
	Namespace   string
	KubeVersion string
	APIVersions []string
	IncludeCRDs bool
	SkipTests   bool
	Timeout     time.Duration // zero: the renderer's default
	Values      []byte
	// Invalid holds why a request that was framed correctly cannot be
	// rendered; it is answered with a "request" error.
	Invalid string
}

// responseHeader is the header of a response; its body is the manifest when
// OK, else the error text.
type responseHeader struct {
	ID        string `json:"id"`
	OK        bool   `json:"ok"`
	ErrorKind string `json:"error_kind,omitempty"`
	Len       int    `json:"len"`
}

// helloHeader is the first frame the renderer writes, before any response.
type helloHeader struct {
	Hello    string `json:"hello"`
	Protocol int    `json:"protocol"`
	Helm     string `json:"helm"`
	Jobs     int    `json:"jobs"`
	Len      int    `json:"len"`
}

// readHeaderLine reads one header line without its "\n". Empty lines between
// frames are skipped. io.EOF means the stream ended cleanly between frames.
func readHeaderLine(r *bufio.Reader) ([]byte, error) {
	for {
		var line []byte
		for {
			chunk, err := r.ReadSlice('\n')
			line = append(line, chunk...)
			if len(line) > maxHeader {
				return nil, fmt.Errorf("%w: a header line is longer than %d bytes", errFraming, maxHeader)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) == 0 {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: the input ends inside a header line", errFraming)
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// readRequest reads one request frame. A frame whose header names its length
// but is otherwise wrong comes back with Invalid set; a stream that can no
// longer be split into frames gives an error wrapping errFraming.
func readRequest(r *bufio.Reader) (*request, error) {
	line, err := readHeaderLine(r)
	if err != nil {
		return nil, err
	}
	// First only what framing needs, so that a header with a bad field can
	// still be skipped and answered.
	var frame struct {
		ID  string `json:"id"`
		Len *int64 `json:"len"`
	}
	if err := json.Unmarshal(line, &frame); err != nil {
		return nil, fmt.Errorf("%w: a header is not a JSON object: %v", errFraming, err)
	}
	if frame.Len == nil || *frame.Len < 0 {
		return nil, fmt.Errorf("%w: header of request %q has no non-negative \"len\"", errFraming, frame.ID)
	}
	if *frame.Len > maxValues {
		return nil, fmt.Errorf("%w: request %q has %d bytes of values, more than %d", errFraming, frame.ID, *frame.Len, maxValues)
	}
	body := make([]byte, *frame.Len)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: the input ends inside the values of request %q", errFraming, frame.ID)
	}
	req := &request{ID: frame.ID, Values: body}
	var h requestHeader
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		req.Invalid = "bad request header: " + err.Error()
		return req, nil
	}
	fillRequest(req, &h)
	return req, nil
}

// fillRequest copies a decoded header into req and checks it.
func fillRequest(req *request, h *requestHeader) {
	req.Chart = h.Chart
	req.Release = h.Release
	req.Namespace = h.Namespace
	req.KubeVersion = h.KubeVersion
	req.APIVersions = h.APIVersions
	req.IncludeCRDs = h.IncludeCRDs == nil || *h.IncludeCRDs
	req.SkipTests = h.SkipTests == nil || *h.SkipTests
	req.Timeout = time.Duration(h.TimeoutMS) * time.Millisecond
	var missing []string
	if h.ID == "" {
		missing = append(missing, "id")
	}
	if h.Chart == "" {
		missing = append(missing, "chart")
	}
	if h.Release == "" {
		missing = append(missing, "release")
	}
	switch {
	case len(missing) > 0:
		req.Invalid = "request has no " + strings.Join(missing, ", ")
	case h.TimeoutMS < 0:
		req.Invalid = "timeout_ms must not be negative"
	case !filepath.IsAbs(strings.TrimSpace(h.Chart)):
		req.Invalid = fmt.Sprintf("chart path %q is not absolute", h.Chart)
	}
}

// frameWriter writes whole frames; it is safe for concurrent use.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// write sends a header (marshalled as one line) and a body, and flushes, so
// that the client sees every frame as soon as it is whole.
func (f *frameWriter) write(header any, body []byte) error {
	line, err := json.Marshal(header)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if _, err := f.w.Write(append(line, '\n')); err != nil {
		f.err = err
		return err
	}
	if _, err := f.w.Write(body); err != nil {
		f.err = err
		return err
	}
	f.err = f.w.Flush()
	return f.err
}

// respond writes the response to one request.
func (f *frameWriter) respond(id string, manifest []byte, kind string, msg string) error {
	if kind == "" {
		return f.write(responseHeader{ID: id, OK: true, Len: len(manifest)}, manifest)
	}
	return f.write(responseHeader{ID: id, ErrorKind: kind, Len: len(msg)}, []byte(msg))
}

// failed tells whether a write has failed (the reader of the output is gone).
func (f *frameWriter) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

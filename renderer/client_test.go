package main

// A client of the renderer's protocol, for the tests: it starts the real
// program, writes request frames and reads response frames, as strata will.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// TestMain removes the built program after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		_ = os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

// rendererBinary builds the program once per test run. The tests run the
// built program, not the package's functions: helm's SDK gives test
// binaries other default capabilities than real programs.
func rendererBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "strata-helm-renderer-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBinary = filepath.Join(dir, "strata-helm-renderer")
		out, err := exec.Command("go", "build", "-o", builtBinary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary
}

// wireRequest is a request as a client sends it.
type wireRequest struct {
	ID          string   `json:"id"`
	Chart       string   `json:"chart"`
	Release     string   `json:"release"`
	Namespace   string   `json:"namespace"`
	KubeVersion string   `json:"kube_version,omitempty"`
	APIVersions []string `json:"api_versions,omitempty"`
	IncludeCRDs *bool    `json:"include_crds,omitempty"`
	SkipTests   *bool    `json:"skip_tests,omitempty"`
	TimeoutMS   int64    `json:"timeout_ms,omitempty"`
	Len         int      `json:"len"`
	values      []byte
}

// wireResponse is a response as a client reads it.
type wireResponse struct {
	ID        string `json:"id"`
	OK        bool   `json:"ok"`
	ErrorKind string `json:"error_kind"`
	Len       int    `json:"len"`
	Body      []byte `json:"-"`
}

// session is one running renderer.
type session struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedBuffer
	hello  map[string]any
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// startSession starts the renderer with args and reads its hello frame.
func startSession(t *testing.T, args ...string) *session {
	t.Helper()
	cmd := exec.Command(rendererBinary(t), args...)
	cmd.Env = []string{"LC_ALL=C"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(out), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := s.stdout.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no hello frame: %v (stderr: %s)", err, s.stderr)
	}
	if err := json.Unmarshal(line, &s.hello); err != nil {
		t.Fatalf("hello frame %q: %v", line, err)
	}
	return s
}

// send writes one request frame.
func (s *session) send(r wireRequest) error {
	r.Len = len(r.values)
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		return err
	}
	_, err = s.stdin.Write(r.values)
	return err
}

// sendRaw writes bytes as they are.
func (s *session) sendRaw(b []byte) error {
	_, err := s.stdin.Write(b)
	return err
}

// next reads one response frame; io.EOF when the renderer closed its output.
func (s *session) next() (*wireResponse, error) {
	line, err := s.stdout.ReadBytes('\n')
	if err != nil {
		if err == io.EOF && len(line) == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("reading a header: %w (got %q)", err, line)
	}
	var r wireResponse
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("header %q: %w", line, err)
	}
	r.Body = make([]byte, r.Len)
	if _, err := io.ReadFull(s.stdout, r.Body); err != nil {
		return nil, fmt.Errorf("body of %q: %w", r.ID, err)
	}
	return &r, nil
}

// exchange sends every request, from another goroutine (a client that only
// wrote, and read nothing, could fill both pipes and wait forever), then
// closes the input; it returns every response and the exit status.
func (s *session) exchange(reqs []wireRequest) ([]*wireResponse, int, error) {
	sendErr := make(chan error, 1)
	go func() {
		var err error
		for _, r := range reqs {
			if err = s.send(r); err != nil {
				break
			}
		}
		_ = s.stdin.Close()
		sendErr <- err
	}()
	all, code, err := s.drain()
	if serr := <-sendErr; err == nil && serr != nil {
		err = fmt.Errorf("sending: %w", serr)
	}
	return all, code, err
}

// finish closes the renderer's input, reads every remaining response and
// returns them with the exit status.
func (s *session) finish() ([]*wireResponse, int, error) {
	_ = s.stdin.Close()
	return s.drain()
}

// drain reads every remaining response and waits for the renderer to exit.
func (s *session) drain() ([]*wireResponse, int, error) {
	var all []*wireResponse
	for {
		r, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
			return all, -1, err
		}
		all = append(all, r)
	}
	err := s.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return all, -1, err
	}
	return all, code, nil
}

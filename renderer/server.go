package main

// The request loop: one reader of standard input, a fixed pool of workers,
// one writer of standard output. Responses go out as renders finish, so
// their order is not the order of the requests; ids match them up.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"
)

// renderFunc renders one request; tests put in renders that never end.
type renderFunc func(*request, *chartCache) ([]byte, error)

type server struct {
	jobs    int
	timeout time.Duration // default deadline of a request
	// maxAbandoned is how many renders past their deadline may keep running
	// in the background before the renderer gives up and exits.
	maxAbandoned int
	helm         string // helm's build information, for the hello frame
	charts       *chartCache
	render       renderFunc
	out          *frameWriter
	log          io.Writer
	exit         func(code int)

	mu        sync.Mutex
	inflight  map[string]bool
	abandoned int
}

// result is what one render gave.
type result struct {
	manifest []byte
	kind     string // "" when the render succeeded
	msg      string
}

// serve answers requests from in until it ends, then waits for the renders
// under way and returns the exit status: 0 when the input ended cleanly
// between frames, 2 when it could not be read as frames, 1 when the output
// could not be written.
func (s *server) serve(in io.Reader) int {
	hello := helloHeader{Hello: "strata-helm-renderer", Protocol: protocolVersion, Helm: s.helm, Jobs: s.jobs}
	if err := s.out.write(hello, nil); err != nil {
		return 1
	}
	work := make(chan *request)
	var wg sync.WaitGroup
	for range s.jobs {
		wg.Go(func() {
			for req := range work {
				s.handle(req)
			}
		})
	}
	code := s.readAll(bufio.NewReaderSize(in, 64<<10), work)
	close(work)
	wg.Wait()
	if s.out.failed() {
		return 1
	}
	return code
}

// readAll reads requests and hands them to the workers.
func (s *server) readAll(r *bufio.Reader, work chan<- *request) int {
	for !s.out.failed() {
		req, err := readRequest(r)
		switch {
		case errors.Is(err, io.EOF):
			return 0
		case err != nil:
			fmt.Fprintf(s.log, "strata-helm-renderer: %v\n", err)
			return 2
		case req.Invalid != "":
			_ = s.out.respond(req.ID, nil, kindRequest, req.Invalid)
		case !s.claim(req.ID):
			_ = s.out.respond(req.ID, nil, kindRequest, fmt.Sprintf("request id %q is already being rendered", req.ID))
		default:
			work <- req
		}
	}
	return 1
}

// claim marks id as under way; false when it already is.
func (s *server) claim(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[id] {
		return false
	}
	s.inflight[id] = true
	return true
}

func (s *server) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, id)
}

// handle renders one request within its deadline and answers it.
func (s *server) handle(req *request) {
	timeout := req.Timeout
	if timeout == 0 {
		timeout = s.timeout
	}
	done := make(chan result, 1)
	go func() { done <- s.renderSafely(req) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		s.release(req.ID)
		_ = s.out.respond(req.ID, r.manifest, r.kind, r.msg)
	case <-timer.C:
		s.abandon(req.ID, timeout)
	}
}

// renderSafely renders, turning a panic inside helm into an answer.
func (s *server) renderSafely(req *request) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{kind: kindInternal, msg: fmt.Sprintf("panic while rendering: %v\n%s", p, debug.Stack())}
		}
	}()
	manifest, err := s.render(req, s.charts)
	switch {
	case err != nil:
		return result{kind: kindHelm, msg: err.Error()}
	case len(manifest) > maxManifest:
		return result{kind: kindTooLarge, msg: fmt.Sprintf("the rendered manifest is larger than %d MiB", maxManifest>>20)}
	}
	return result{manifest: manifest}
}

// abandon answers a render that ran past its deadline. Helm's template engine
// cannot be interrupted, so the render goes on in the background, holding a
// core, until it ends or the renderer exits; after too many, the renderer
// exits at once.
func (s *server) abandon(id string, timeout time.Duration) {
	s.release(id)
	_ = s.out.respond(id, nil, kindTimeout, fmt.Sprintf("rendering took longer than %s and was abandoned", timeout))
	s.mu.Lock()
	s.abandoned++
	over := s.abandoned > s.maxAbandoned
	s.mu.Unlock()
	if over {
		fmt.Fprintf(s.log, "strata-helm-renderer: more than %d renders ran past their deadline; exiting\n", s.maxAbandoned)
		s.exit(3)
	}
}

package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// rawProvider is the fake provider's HTTP/1.1 server: a request's line and
// headers are read by hand from a kept-alive connection, its body read or
// skipped, and a constant 200 written, a few µs of CPU a delivery. The
// provider is not MIO: in production it runs elsewhere, so the bench keeps
// its cost off the two cores MIO and PostgreSQL share, as the raw load
// generator does for ingest (net/http's server spent ~15 µs a delivery).
// It speaks what MIO's webhook sender writes: Content-Length or chunked
// bodies, keep-alive; anything else is answered 400 and its connection
// closed, and counted (bad).
type rawProvider struct {
	ln      net.Listener
	deliver func(body []byte, at time.Time) // body nil unless wantBody()
	// wantBody says whether the next delivery's body is read (the reply
	// phase's tracking) or skipped.
	wantBody func() bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	bad   error // the first request the provider could not read
}

var okResponse = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

func newRawProvider(deliver func(body []byte, at time.Time), wantBody func() bool) (*rawProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &rawProvider{ln: ln, deliver: deliver, wantBody: wantBody, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

func (p *rawProvider) addr() string { return p.ln.Addr().String() }

func (p *rawProvider) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		go p.serve(c)
	}
}

// err returns the first malformed request's error, nil when none.
func (p *rawProvider) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad
}

func (p *rawProvider) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *rawProvider) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 32<<10)
	var body []byte
	for {
		req, err := readRawRequest(br, p.wantBody, body[:0])
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.mu.Lock()
				if p.bad == nil {
					p.bad = err
				}
				p.mu.Unlock()
				_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			}
			return
		}
		body = req.body
		p.deliver(req.body, time.Now())
		if _, err := c.Write(okResponse); err != nil {
			return
		}
		if req.close {
			return
		}
	}
}

// rawRequest is what the provider keeps of a request.
type rawRequest struct {
	body  []byte // nil when skipped
	close bool   // Connection: close
}

// readRawRequest reads one request from br: its line, headers and body
// (appended to buf when wantBody says so once the headers are in, else
// discarded).
func readRawRequest(br *bufio.Reader, wantBody func() bool, buf []byte) (rawRequest, error) {
	var r rawRequest
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return r, io.EOF
		}
		return r, fmt.Errorf("request line: %w", err)
	}
	if !bytes.HasSuffix(line, []byte(" HTTP/1.1\r\n")) {
		return r, fmt.Errorf("request line %q: want HTTP/1.1", line)
	}
	h, err := readRawHeaders(br)
	if err != nil {
		return r, err
	}
	r.close = h.close
	// A request without Content-Length or chunked encoding has no body.
	keep := wantBody()
	if keep {
		r.body = buf
	}
	r.body, err = readRawBody(br, h, keep, r.body)
	return r, err
}

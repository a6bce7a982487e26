package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
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
	length, chunked := -1, false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return r, fmt.Errorf("header: %w", err)
		}
		if len(h) <= 2 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return r, fmt.Errorf("header %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return r, fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return r, fmt.Errorf("Transfer-Encoding %q", value)
			}
			chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			r.close = bytes.EqualFold(value, []byte("close"))
		}
	}
	keep := wantBody()
	if keep {
		r.body = buf
	}
	take := func(n int) error {
		if !keep {
			_, err := br.Discard(n)
			return err
		}
		start := len(r.body)
		r.body = append(r.body, make([]byte, n)...)
		_, err := io.ReadFull(br, r.body[start:])
		return err
	}
	switch {
	case chunked:
		for {
			sz, err := br.ReadSlice('\n')
			if err != nil {
				return r, fmt.Errorf("chunk size: %w", err)
			}
			sz, _, _ = bytes.Cut(bytes.TrimSpace(sz), []byte(";"))
			n, err := strconv.ParseInt(string(sz), 16, 32)
			if err != nil || n < 0 {
				return r, fmt.Errorf("chunk size %q", sz)
			}
			if n == 0 {
				// Trailers (none expected) end with an empty line.
				for {
					t, err := br.ReadSlice('\n')
					if err != nil {
						return r, fmt.Errorf("trailer: %w", err)
					}
					if len(t) <= 2 {
						return r, nil
					}
				}
			}
			if err := take(int(n)); err != nil {
				return r, fmt.Errorf("chunk: %w", err)
			}
			if _, err := br.Discard(2); err != nil {
				return r, fmt.Errorf("chunk end: %w", err)
			}
		}
	case length > 0:
		if err := take(length); err != nil {
			return r, fmt.Errorf("body: %w", err)
		}
	}
	return r, nil
}

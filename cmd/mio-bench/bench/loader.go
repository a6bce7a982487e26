package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Load generators of runLoad (--loader).
const (
	// LoaderRaw writes each request with one write on a kept-alive
	// connection per client and parses the answer's status line and
	// headers by hand: a few µs of CPU a request, like pgbench's C client
	// beside the reference.
	LoaderRaw = "raw"
	// LoaderGo is net/http's client: ~45 µs of CPU a request on the
	// machine of docs/benchmarks.md, taken from the two cores the server
	// and PostgreSQL share.
	LoaderGo = "go"
)

// loadRequest is one request of a load phase.
type loadRequest struct {
	method string
	url    string // absolute http:// URL
	header [][2]string
	body   []byte
}

// httpRequest turns r into a net/http request (LoaderGo).
func (r *loadRequest) httpRequest(ctx context.Context) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(r.body))
	for _, h := range r.header {
		req.Header.Set(h[0], h[1])
	}
	return req
}

// rawConn is one kept-alive HTTP/1.1 connection of LoaderRaw.
type rawConn struct {
	host string // host:port
	conn net.Conn
	br   *bufio.Reader
	out  []byte
}

// do sends r and reads the answer, returning its status. The body is read
// and dropped. A connection the server closed, or asked to close, is
// redialled by the next call.
func (c *rawConn) do(r *loadRequest, timeout time.Duration) (int, error) {
	if c.conn == nil {
		u, err := url.Parse(r.url)
		if err != nil {
			return 0, err
		}
		c.host = u.Host
		conn, err := net.DialTimeout("tcp", c.host, timeout)
		if err != nil {
			return 0, err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	path := r.url
	if i := indexPath(path); i >= 0 {
		path = path[i:]
	}
	b := c.out[:0]
	b = append(b, r.method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\n"...)
	for _, h := range r.header {
		b = append(b, h[0]...)
		b = append(b, ": "...)
		b = append(b, h[1]...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(r.body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, r.body...)
	c.out = b
	_ = c.conn.SetDeadline(time.Now().Add(timeout))
	if _, err := c.conn.Write(b); err != nil {
		c.close()
		return 0, err
	}
	status, keep, err := c.readResponse()
	if err != nil || !keep {
		c.close()
	}
	return status, err
}

func (c *rawConn) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn, c.br = nil, nil
	}
}

// readResponse reads a status line, headers, and a Content-Length or
// chunked body.
func (c *rawConn) readResponse() (status int, keepAlive bool, err error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	h, err := readRawHeaders(c.br)
	if err != nil {
		return 0, false, err
	}
	if !h.chunked && h.length < 0 {
		_, err = io.Copy(io.Discard, c.br) // a body to the end of the connection
		return status, false, err
	}
	_, err = readRawBody(c.br, h, false, nil)
	return status, !h.close, err
}

// indexPath returns where the path of an absolute URL starts.
func indexPath(u string) int {
	const scheme = "http://"
	if len(u) < len(scheme) || u[:len(scheme)] != scheme {
		return -1
	}
	for i := len(scheme); i < len(u); i++ {
		if u[i] == '/' {
			return i
		}
	}
	return -1
}

var errUnknownLoader = errors.New(`unknown load generator: want "raw" or "go"`)

// checkLoader validates a --loader value ("" is LoaderRaw).
func checkLoader(s string) (string, error) {
	switch s {
	case "":
		return LoaderRaw, nil
	case LoaderRaw, LoaderGo:
		return s, nil
	}
	return "", errUnknownLoader
}

package httpapi

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// GuardFraming wraps a listener so that a request whose body length is
// ambiguous — Transfer-Encoding together with Content-Length, a
// Transfer-Encoding on an HTTP/1.0 request, or a folded header line — is
// answered 400 with Connection: close and its connection closed, before
// net/http reads it (RFC 9112 §6.1, §6.3, §5.2). net/http would serve such
// a request by its Transfer-Encoding alone, and keep the connection; a
// proxy in front that framed it by Content-Length instead would take the
// rest of the body as a second request and have it answered — request
// smuggling. net/http removes both headers before a handler runs, so the
// check is made on the bytes: each connection's request heads are held
// until complete and checked, bodies pass through as they arrive
// (framed the way net/http frames them, to find the next head). A head
// net/http rejects by itself ends the check (net/http closes the
// connection); a chunked body it would find malformed ends the
// connection there. Requests before the rejected one on a pipelined
// connection are answered as usual.
func GuardFraming(ln net.Listener, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &framingListener{Listener: ln, log: log}
}

type framingListener struct {
	net.Listener
	log *slog.Logger
}

func (l *framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	fc := &framedConn{Conn: c, log: l.log, store: make([]byte, 0, 8<<10)}
	fc.raw = fc.store
	return fc, nil
}

// Limits of the framing check. A head or chunk line longer than these is
// passed through unchecked: net/http rejects it and closes the
// connection (its defaults are 1 MiB + 4 KiB of header and 4 KiB lines).
const (
	maxHeadBytes      = 1<<20 + 64<<10
	maxChunkLineBytes = 8 << 10
)

// framing states.
const (
	frameHead      = iota // a request head is expected
	frameBody             // bodyLeft bytes of a Content-Length body
	frameChunkLine        // a chunk-size line
	frameChunkData        // bodyLeft bytes of chunk data, then CRLF
	frameTrailer          // trailer lines up to a blank line
	framePass             // unchecked from here on: net/http rejects the head and closes
	frameStop             // a malformed chunked body: nothing more is handed on, then EOF
	frameBad              // the request at raw[ready:] is rejected
)

// framedConn holds back each request head until it is complete and
// checked. raw holds the bytes read and not yet handed to net/http:
// raw[:ready] may be handed out, raw[ready:scan] are a head or line in
// progress, scan is where the framing left off. net/http never reads a
// connection from two goroutines at once; Close may run concurrently.
type framedConn struct {
	net.Conn
	log *slog.Logger

	raw      []byte
	store    []byte // raw's buffer, reused while heads are small
	ready    int
	scan     int
	state    int
	bodyLeft int64
	// afterPost: the last head was a POST's (see frameHead).
	afterPost bool
	buf       [4096]byte

	closeOnce sync.Once
	rejected  bool // set by Read before it returns EOF, read by Close after
	mu        sync.Mutex
}

func (c *framedConn) Read(b []byte) (int, error) {
	for {
		if c.ready > 0 {
			n := copy(b, c.raw[:c.ready])
			c.raw = c.raw[n:]
			c.ready -= n
			c.scan -= n
			if len(c.raw) == 0 {
				c.raw = c.store[:0]
			}
			return n, nil
		}
		if c.state == frameBad || c.state == frameStop {
			return 0, io.EOF
		}
		n, err := c.Conn.Read(c.buf[:])
		if n > 0 {
			c.raw = append(c.raw, c.buf[:n]...)
			c.advance()
			if c.state == frameBad {
				c.mu.Lock()
				c.rejected = true
				c.mu.Unlock()
				c.log.Warn("request with ambiguous framing rejected", "remote_addr", c.RemoteAddr().String())
			}
		}
		if err != nil && c.ready == 0 {
			return 0, err
		}
		// With bytes to hand out, an error (a deadline, EOF) is returned
		// by the next Read, which meets it again.
	}
}

// Close answers a rejected request (net/http, having read EOF where its
// head was, closes the connection without a word) and closes.
func (c *framedConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		rejected := c.rejected
		c.mu.Unlock()
		if rejected {
			const body = "ambiguous request framing: Transfer-Encoding with Content-Length, on HTTP/1.0, or a folded header\n"
			_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c.Conn, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "+
				strconv.Itoa(len(body))+"\r\n\r\n"+body)
		}
	})
	return c.Conn.Close()
}

// advance frames raw[scan:] as far as it is complete, moving ready.
func (c *framedConn) advance() {
	for c.scan < len(c.raw) {
		switch c.state {
		case framePass:
			c.scan = len(c.raw)
			c.ready = c.scan
		case frameBad, frameStop:
			return
		case frameBody, frameChunkData:
			n := min(int64(len(c.raw)-c.scan), c.bodyLeft)
			c.scan += int(n)
			c.ready = c.scan
			c.bodyLeft -= n
			if c.bodyLeft > 0 {
				return
			}
			if c.state == frameBody {
				c.state = frameHead
			} else {
				c.state, c.bodyLeft = frameChunkLine, -2 // the CRLF after the data
			}
		case frameHead:
			if c.afterPost {
				// net/http drops up to 4 CR or LF bytes after a POST
				// (old clients' stray CRLF); so does the framing.
				if len(c.raw)-c.scan < 4 {
					return
				}
				for i := 0; i < 4 && (c.raw[c.scan] == '\r' || c.raw[c.scan] == '\n'); i++ {
					c.scan++
				}
				c.ready = c.scan
				c.afterPost = false
				continue
			}
			end := headEnd(c.raw[c.scan:])
			if end < 0 {
				if len(c.raw)-c.scan > maxHeadBytes {
					c.state = framePass
					continue
				}
				return
			}
			head := c.raw[c.scan : c.scan+end]
			c.state, c.bodyLeft = checkHead(head)
			if c.state == frameBad {
				return
			}
			c.afterPost = bytes.HasPrefix(head, []byte("POST "))
			c.scan += end
			c.ready = c.scan
		case frameChunkLine, frameTrailer:
			if c.bodyLeft == -2 { // the CRLF closing chunk data
				if len(c.raw)-c.scan < 2 {
					return
				}
				if !bytes.Equal(c.raw[c.scan:c.scan+2], []byte("\r\n")) {
					c.state = frameStop
					return
				}
				c.scan += 2
				c.ready = c.scan
				c.bodyLeft = 0
				continue
			}
			i := bytes.IndexByte(c.raw[c.scan:], '\n')
			if i < 0 {
				if len(c.raw)-c.scan > maxChunkLineBytes {
					c.state = frameStop
				}
				return
			}
			line := c.raw[c.scan : c.scan+i+1]
			if c.state == frameTrailer {
				if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
					c.state = frameHead // the blank line ending the trailer
				}
			} else {
				size, ok := chunkSize(line)
				switch {
				case !ok:
					c.state = frameStop
					return
				case size == 0:
					c.state = frameTrailer
				default:
					c.state, c.bodyLeft = frameChunkData, size
				}
			}
			c.scan += i + 1
			c.ready = c.scan
		}
	}
}

// headEnd returns the length of the request head at the start of b, its
// blank line included, or -1 while it is incomplete. Lines may end in
// CRLF or a bare LF, as net/http accepts.
func headEnd(b []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		line := b[off : off+i]
		off += i + 1
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return off
		}
	}
}

// checkHead frames the body following a complete request head: the next
// state and, for a Content-Length body, its length. It is frameBad for
// ambiguous framing, framePass for heads net/http itself rejects.
func checkHead(head []byte) (state int, length int64) {
	lines := bytes.Split(bytes.TrimRight(head, "\r\n"), []byte("\n"))
	reqLine := bytes.TrimSuffix(lines[0], []byte("\r"))
	if len(reqLine) == 0 {
		return framePass, 0
	}
	http11 := bytes.HasSuffix(reqLine, []byte(" HTTP/1.1"))
	var te, cl [][]byte
	for _, line := range lines[1:] {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			return frameBad, 0 // obs-fold: RFC 9112 §5.2 allows rejecting it
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return framePass, 0
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			te = append(te, value)
		case bytes.EqualFold(name, []byte("Content-Length")):
			cl = append(cl, value)
		}
	}
	return bodyFraming(te, cl, http11)
}

// bodyFraming is checkHead's verdict on a head's framing headers.
func bodyFraming(te, cl [][]byte, http11 bool) (state int, length int64) {
	switch {
	case len(te) > 0 && (len(cl) > 0 || !http11):
		return frameBad, 0
	case len(te) > 0:
		if len(te) == 1 && bytes.EqualFold(te[0], []byte("chunked")) {
			return frameChunkLine, 0
		}
		return framePass, 0 // net/http answers 501 and closes
	case len(cl) > 0:
		for _, v := range cl[1:] {
			if !bytes.Equal(v, cl[0]) {
				return framePass, 0 // net/http answers 400 and closes
			}
		}
		n, err := strconv.ParseUint(string(cl[0]), 10, 63)
		if err != nil {
			return framePass, 0
		}
		if n == 0 {
			return frameHead, 0
		}
		return frameBody, int64(n)
	}
	return frameHead, 0
}

// chunkSize parses a chunk-size line (CRLF-terminated, extensions after
// ';'), as net/http does.
func chunkSize(line []byte) (int64, bool) {
	if !bytes.HasSuffix(line, []byte("\r\n")) || bytes.IndexByte(line[:len(line)-2], '\r') >= 0 {
		return 0, false
	}
	line = line[:len(line)-2]
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(line), 16, 64)
	if err != nil || n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}

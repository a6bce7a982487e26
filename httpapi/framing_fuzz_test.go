package httpapi_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/miohq/mio/httpapi"
)

// oneConn is a listener that accepts one connection.
type oneConn struct {
	net.Conn
	taken bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if l.taken {
		return nil, net.ErrClosed
	}
	l.taken = true
	return l.Conn, nil
}

func (l *oneConn) Addr() net.Addr { return l.LocalAddr() }

// FuzzGuardFraming sends arbitrary bytes, in chunks of arbitrary sizes,
// through GuardFraming: it never panics or stalls, and what it hands on
// is always a prefix of what arrived — bytes are held back, never
// altered, reordered or invented.
func FuzzGuardFraming(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n"), uint8(7))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n"), uint8(1))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n"), uint8(3))
	f.Add([]byte("GET / HTTP/1.0\nTransfer-Encoding: chunked\n\n"), uint8(0))
	f.Add([]byte("POST / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		client, server := net.Pipe()
		ln := httpapi.GuardFraming(&oneConn{Conn: server}, nil)
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, client) }() // a 400 goes here
		go func() {
			step := int(chunk%64) + 1
			for rest := in; len(rest) > 0; {
				n := min(step, len(rest))
				if _, err := client.Write(rest[:n]); err != nil {
					break
				}
				rest = rest[n:]
			}
			_ = client.Close()
		}()
		read := make(chan []byte, 1)
		go func() {
			out, _ := io.ReadAll(c)
			read <- out
		}()
		var out []byte
		select {
		case out = <-read:
		case <-time.After(5 * time.Second):
			t.Fatalf("stalled on %q", in)
		}
		_ = c.Close()
		if !bytes.HasPrefix(in, out) {
			t.Fatalf("handed on %q, not a prefix of %q", out, in)
		}
	})
}

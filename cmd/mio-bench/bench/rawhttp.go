package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// The raw HTTP/1.1 of the load generator (LoaderRaw, reading responses)
// and of the fake provider (rawProvider, reading requests): headers and
// bodies read by hand from a kept-alive connection, a few µs a message.

// rawHeaders is what the raw readers keep of a message's headers.
type rawHeaders struct {
	length  int64 // Content-Length, -1 when absent
	chunked bool  // Transfer-Encoding: chunked
	close   bool  // Connection: close
}

// readRawHeaders reads header lines up to the empty line that ends them.
// A Transfer-Encoding other than chunked is refused (MIO sends none).
func readRawHeaders(br *bufio.Reader) (rawHeaders, error) {
	h := rawHeaders{length: -1}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return h, fmt.Errorf("header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("malformed header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if h.length, err = strconv.ParseInt(string(value), 10, 64); err != nil || h.length < 0 {
				return h, fmt.Errorf("malformed Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return h, fmt.Errorf("unsupported Transfer-Encoding %q", value)
			}
			h.chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			h.close = bytes.EqualFold(value, []byte("close"))
		}
	}
}

// readRawBody reads the body h announces — chunked, or Content-Length
// bytes (none when absent: the caller decides what a message without
// either means) — appending it to dst when keep, else discarding it.
func readRawBody(br *bufio.Reader, h rawHeaders, keep bool, dst []byte) ([]byte, error) {
	take := func(n int64) error {
		if !keep {
			_, err := br.Discard(int(n))
			return err
		}
		start := len(dst)
		dst = append(dst, make([]byte, n)...)
		_, err := io.ReadFull(br, dst[start:])
		return err
	}
	if !h.chunked {
		if h.length > 0 {
			if err := take(h.length); err != nil {
				return dst, fmt.Errorf("body: %w", err)
			}
		}
		return dst, nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return dst, fmt.Errorf("chunk size: %w", err)
		}
		size, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 32)
		if err != nil || n < 0 {
			return dst, fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			// Trailers (none expected) end with an empty line.
			for {
				t, err := br.ReadSlice('\n')
				if err != nil {
					return dst, fmt.Errorf("trailer: %w", err)
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return dst, nil
				}
			}
		}
		if err := take(n); err != nil {
			return dst, fmt.Errorf("chunk: %w", err)
		}
		if _, err := br.Discard(2); err != nil { // the chunk's CRLF
			return dst, fmt.Errorf("chunk end: %w", err)
		}
	}
}

package fetch

import (
	"fmt"
	"io"
)

// limitedBody passes through at most left bytes and fails with ErrTooLarge
// as soon as the stream proves longer, without reading more than one byte
// past the limit.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		if err != nil {
			b.err = err
		}
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = fmt.Errorf("fetch: body: %w", ErrTooLarge)
	return n, b.err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

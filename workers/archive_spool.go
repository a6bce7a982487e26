package workers

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// archiveSpoolMemory is how much of one archive object a spool keeps in
// memory before it moves the object to a temporary file.
const archiveSpoolMemory = 1 << 20

// archiveSpoolBuffer is the write buffer of a spilled spool: lines are
// ~1 KB, and writing each (and its newline) to the file was two system
// calls a line, ~20,000 for a batch of 10,000 messages.
const archiveSpoolBuffer = 64 << 10

// spool holds one archive object while its batch is read: in memory up
// to max bytes, then in a temporary file in dir (os.TempDir when empty).
// A batch may reach BatchBytes (64 MiB by default, ~25 MB for 10,000
// webhooks): held in the heap it was the server's peak RSS, and a
// collector set to trade memory for CPU (GOGC) multiplied it. A spool
// keeps the heap flat whatever the batch size. When no temporary file
// can be made (a read-only file system), the object stays in memory:
// archiving goes on as before.
type spool struct {
	dir  string
	max  int
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer // buffers writes to file
	n    int64
}

// newSpool returns an empty spool.
func newSpool(dir string, max int) *spool { return &spool{dir: dir, max: max} }

// writeLine appends line and a newline.
func (s *spool) writeLine(line []byte) error {
	if s.file == nil && s.mem.Len()+len(line)+1 > s.max {
		s.spill()
	}
	if s.file != nil {
		if _, err := s.w.Write(line); err != nil {
			return fmt.Errorf("archive spool: %w", err)
		}
		if err := s.w.WriteByte('\n'); err != nil {
			return fmt.Errorf("archive spool: %w", err)
		}
	} else {
		s.mem.Write(line)
		s.mem.WriteByte('\n')
	}
	s.n += int64(len(line) + 1)
	return nil
}

// spill moves what is in memory to a temporary file; on failure the
// spool stays in memory.
func (s *spool) spill() {
	f, err := os.CreateTemp(s.dir, "mio-archive-*.ndjson")
	if err != nil {
		s.max = int(^uint(0) >> 1) // no file to be had: stay in memory
		return
	}
	if _, err := f.Write(s.mem.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		s.max = int(^uint(0) >> 1)
		return
	}
	s.file = f
	s.w = bufio.NewWriterSize(f, archiveSpoolBuffer)
	s.mem = bytes.Buffer{}
}

// Len is the object's size in bytes.
func (s *spool) Len() int64 { return s.n }

// reader reads the object from its start.
func (s *spool) reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem.Bytes()), nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, fmt.Errorf("archive spool: %w", err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("archive spool: %w", err)
	}
	return s.file, nil
}

// spilled reports whether the object is in a temporary file.
func (s *spool) spilled() bool { return s.file != nil }

// Close removes the temporary file, if any.
func (s *spool) Close() error {
	if s.file == nil {
		return nil
	}
	name := s.file.Name()
	err := s.file.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	s.file, s.w = nil, nil
	return err
}

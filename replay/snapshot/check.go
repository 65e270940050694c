package snapshot

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Checked is what Check read from a snapshot.
type Checked struct {
	Header   Header
	Entities int64
	SHA256   string
}

// Check reads a whole snapshot, block by block up to its trailer
// and to the end of the input, and returns its header, its entity count
// and the SHA-256 of its bytes. A truncated or corrupt snapshot fails with
// ErrBadSnapshot: the journal must never be trimmed below one.
func Check(in io.Reader) (Checked, error) {
	h := sha256.New()
	tee := io.TeeReader(in, h)
	c, err := readSnapshot(tee)
	if err != nil {
		return c, err
	}
	// The decoder is closed: nothing else reads tee now.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return c, err
	}
	c.SHA256 = hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// readSnapshot reads a snapshot through to the end of its compressed
// stream, on one goroutine (the decoder reads no further once it returns).
func readSnapshot(in io.Reader) (Checked, error) {
	var c Checked
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(in, magic); err != nil || string(magic) != snapshotMagic {
		return c, fmt.Errorf("%w: not a tablejournal snapshot", ErrBadSnapshot)
	}
	zr, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	defer zr.Close()
	d := &snapReader{r: bufio.NewReaderSize(zr, 1<<16)}
	if c.Header, err = d.header(); err != nil {
		return c, err
	}
	for {
		_, es, err := d.block()
		if err != nil {
			return c, eofIsCorrupt(err)
		}
		if es == nil {
			break
		}
		c.Entities += int64(len(es))
	}
	n, err := d.uvarint()
	if err != nil {
		return c, eofIsCorrupt(err)
	}
	if n != uint64(c.Entities) {
		return c, fmt.Errorf("%w: trailer counts %d entities, read %d", ErrBadSnapshot, n, c.Entities)
	}
	if _, err := io.Copy(io.Discard, d.r); err != nil {
		return c, fmt.Errorf("%w: after the trailer: %v", ErrBadSnapshot, err)
	}
	return c, nil
}

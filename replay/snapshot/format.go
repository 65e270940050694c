package snapshot

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// The snapshot file format.
//
// A snapshot file starts with the 8 bytes of snapshotMagic, uncompressed,
// followed by one zstd stream holding:
//
//	uvarint len, Header as JSON
//	block*      uvarint n (1..MaxBlock), string pk, n × entity
//	trailer     uvarint 0, uvarint total entities
//
// where string is uvarint length + bytes and entity is string rk, then the
// properties in the binary EDM encoding of edm.AppendBinary (the one the
// embedded store keeps its rows in). Every EDM value round-trips exactly. A
// block holds rows of one partition; load writes each block as one or more
// transactions. The rows are the tips and version rows, the erase markers
// (rows.ErasedKey, rows.ErasedRowKey) written at or before the snapshot's
// sequence, and the partitions' fence rows (rows.FenceKey) as they stood at
// it, which carry the prune horizon (SPEC §4): a copy refuses the points
// the original refuses, and says "erased" where it does. Snapshots written
// before fences (or markers) were carried hold none and load as before,
// without a horizon (or marker).
//
// zstd (github.com/klauspost/compress/zstd): rows of the layout repeat
// their property names, system columns and key prefixes, which zstd's
// large window and entropy coding shrink several times over at a speed
// (hundreds of MB/s per core, multithreaded) that keeps the snapshot bound
// by the table store, not by compression; gzip compresses less and slower.
// The stream carries zstd's own checksum, and the trailer's count detects
// truncation.
const snapshotMagic = "TJSNAP\x00\x01"

// FormatVersion is the snapshot format written by Snapshot: 2, whose
// version rows are keyed by inverted journal sequence (SPEC §4). Load also
// reads format 1, whose version rows were keyed by inverted version, and
// moves its rows to the layout keyed by sequence (format1.go); the encoding
// of blocks and entities is the same in both.
const FormatVersion = 2

// MaxBlock is the most entities of one block of a snapshot, Azure's limit
// on a transaction.
const MaxBlock = store.MaxOps

// Header describes a snapshot.
type Header struct {
	Format int `json:"format"`
	// Table is the snapshotted table.
	Table string `json:"table"`
	// Seq is the journal sequence the snapshot is consistent at: its rows
	// are the table's state after applying the journal up to Seq.
	Seq uint64 `json:"seq"`
	// Journal names the journal stream.
	Journal string `json:"journal,omitempty"`
	// Layout is the table's layout when plain (SPEC §4): the rows are
	// then its history's, and Load writes them into the history table of
	// its destination and the tips into the destination itself. Empty for
	// a versioned table (and in snapshots made before plain tables).
	Layout wire.Layout `json:"layout,omitempty"`
}

// maxString bounds a string read from a snapshot, against corrupt input.
const maxString = 4 << 20

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendEntity encodes one stored row (keys and properties; etag and
// Timestamp are the store's, not part of a snapshot).
func appendEntity(b []byte, e store.Entity) []byte {
	return edm.AppendBinary(appendString(b, e.RK), e.Props)
}

// snapReader decodes a snapshot stream after its magic.
type snapReader struct {
	r *bufio.Reader
}

func (d *snapReader) uvarint() (uint64, error) {
	n, err := binary.ReadUvarint(d.r)
	return n, eofIsCorrupt(err)
}

func (d *snapReader) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > maxString {
		return nil, fmt.Errorf("%w: a string of %d bytes", ErrBadSnapshot, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, eofIsCorrupt(err)
	}
	return b, nil
}

func (d *snapReader) string() (string, error) {
	b, err := d.bytes()
	return string(b), err
}

func eofIsCorrupt(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated", ErrBadSnapshot)
	}
	return err
}

func (d *snapReader) header() (Header, error) {
	b, err := d.bytes()
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Header{}, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if h.Format != FormatVersion && h.Format != 1 {
		return Header{}, fmt.Errorf("%w: format %d, this program reads 1 and %d", ErrBadSnapshot, h.Format, FormatVersion)
	}
	if h.Layout != "" && h.Layout != wire.LayoutPlain {
		return Header{}, fmt.Errorf("%w: layout %q", ErrBadSnapshot, h.Layout)
	}
	return h, nil
}

// block reads the next block; n is 0 at the trailer.
func (d *snapReader) block() (pk string, es []store.Entity, err error) {
	n, err := d.uvarint()
	if err != nil || n == 0 {
		return "", nil, err
	}
	if n > MaxBlock {
		return "", nil, fmt.Errorf("%w: a block of %d entities", ErrBadSnapshot, n)
	}
	if pk, err = d.string(); err != nil {
		return "", nil, err
	}
	es = make([]store.Entity, n)
	for i := range es {
		if es[i], err = d.entity(pk); err != nil {
			return "", nil, err
		}
	}
	return pk, es, nil
}

func (d *snapReader) entity(pk string) (store.Entity, error) {
	rk, err := d.string()
	if err != nil {
		return store.Entity{}, err
	}
	props, err := edm.ReadBinary(d.r)
	if err != nil {
		return store.Entity{}, fmt.Errorf("%w: row %q/%q: %w", ErrBadSnapshot, pk, rk, err)
	}
	return store.Entity{PK: pk, RK: rk, Props: props}, nil
}

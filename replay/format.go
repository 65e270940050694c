package replay

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/store"
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
// where string is uvarint length + bytes and entity is string rk, uvarint
// property count, then per property (in name order) string name, one type
// byte (events.Type) and the value: String and Guid as string, Boolean one
// byte, Int32 and Int64 zig-zag varint, Double 8 bytes IEEE 754 little
// endian (NaN payloads and -0 kept), DateTime varint Unix seconds and
// uvarint nanoseconds, Binary as string. Every EDM value round-trips
// exactly. A block holds rows of one partition; load writes each block as
// one or more transactions.
//
// zstd (github.com/klauspost/compress/zstd): rows of the layout repeat
// their property names, system columns and key prefixes, which zstd's
// large window and entropy coding shrink several times over at a speed
// (hundreds of MB/s per core, multithreaded) that keeps the snapshot bound
// by the table store, not by compression; gzip compresses less and slower.
// The stream carries zstd's own checksum, and the trailer's count detects
// truncation.
const snapshotMagic = "TJSNAP\x00\x01"

// FormatVersion is the snapshot format written by Snapshot.
const FormatVersion = 1

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
}

// decoding limits, against corrupt input.
const (
	maxString = 4 << 20
	maxProps  = 1024
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendEntity encodes one stored row (keys and properties; etag and
// Timestamp are the store's, not part of a snapshot).
func appendEntity(b []byte, e store.Entity) []byte {
	b = appendString(b, e.RK)
	names := make([]string, 0, len(e.Props))
	for name := range e.Props {
		names = append(names, name)
	}
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		v := e.Props[name]
		b = appendString(b, name)
		b = append(b, byte(v.Type))
		switch v.Type {
		case events.TypeString, events.TypeGuid:
			b = appendString(b, v.Str)
		case events.TypeBoolean:
			if v.Bool {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case events.TypeInt32, events.TypeInt64:
			b = binary.AppendVarint(b, v.Int)
		case events.TypeDouble:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float))
		case events.TypeDateTime:
			b = binary.AppendVarint(b, v.Time.Unix())
			b = binary.AppendUvarint(b, uint64(v.Time.Nanosecond()))
		case events.TypeBinary:
			b = binary.AppendUvarint(b, uint64(len(v.Bytes)))
			b = append(b, v.Bytes...)
		}
	}
	return b
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
	if h.Format != FormatVersion {
		return Header{}, fmt.Errorf("%w: format %d, this program reads %d", ErrBadSnapshot, h.Format, FormatVersion)
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
	n, err := d.uvarint()
	if err != nil {
		return store.Entity{}, err
	}
	if n > maxProps {
		return store.Entity{}, fmt.Errorf("%w: %d properties", ErrBadSnapshot, n)
	}
	props := make(events.Entity, n)
	for range n {
		name, err := d.string()
		if err != nil {
			return store.Entity{}, err
		}
		t, err := d.r.ReadByte()
		if err != nil {
			return store.Entity{}, eofIsCorrupt(err)
		}
		v := events.Value{Type: events.Type(t)}
		switch v.Type {
		case events.TypeString, events.TypeGuid:
			v.Str, err = d.string()
		case events.TypeBoolean:
			var c byte
			c, err = d.r.ReadByte()
			v.Bool = c == 1
		case events.TypeInt32, events.TypeInt64:
			v.Int, err = binary.ReadVarint(d.r)
		case events.TypeDouble:
			var b [8]byte
			_, err = io.ReadFull(d.r, b[:])
			v.Float = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
		case events.TypeDateTime:
			var sec int64
			var ns uint64
			if sec, err = binary.ReadVarint(d.r); err == nil {
				ns, err = binary.ReadUvarint(d.r)
			}
			v.Time = time.Unix(sec, int64(ns)).UTC()
		case events.TypeBinary:
			v.Bytes, err = d.bytes()
		default:
			return store.Entity{}, fmt.Errorf("%w: property %q of unknown type %d", ErrBadSnapshot, name, t)
		}
		if err != nil {
			return store.Entity{}, eofIsCorrupt(err)
		}
		props[name] = v
	}
	return store.Entity{PK: pk, RK: rk, Props: props}, nil
}

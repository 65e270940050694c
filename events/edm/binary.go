package edm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// The binary EDM encoding of an entity's properties, the one layout the
// embedded store keeps its rows in and snapshot files carry them in:
//
//	uvarint count
//	count × (string name, byte type, value)   names strictly ascending, bytewise
//
// where string is a uvarint length and the bytes, and value is by type:
// String and Guid a string; Boolean one byte, 0 or 1; Int32 and Int64 a
// zig-zag varint; Double the 8 bytes of its IEEE 754 bits, little endian
// (NaN payloads and -0 kept); DateTime a zig-zag varint of Unix seconds and
// a uvarint of nanoseconds; Binary a string. The type byte is the Type less
// one (String 0 … Binary 7), as it was before the zero Type meant no type.
//
// The encoding is canonical: ReadBinary accepts only what AppendBinary
// writes (names in order and once, Booleans 0 or 1, Int32 in range,
// nanoseconds below a second), so whatever decodes re-encodes to the same
// bytes. The golden file testdata/entity.bin pins the layout; files already
// written by the embedded store and snapshot format 1 use it.

// ErrBadBinary is wrapped by the errors of ReadBinary: the input is not an
// encoding AppendBinary writes. Truncated input wraps io.ErrUnexpectedEOF
// too. Checked with errors.Is.
var ErrBadBinary = errors.New("bad binary entity")

// Bounds ReadBinary holds input to, far above what a valid entity needs,
// so that corrupt input cannot ask for unbounded memory.
const (
	maxBinaryProps  = 1024
	maxBinaryString = 4 << 20
)

// AppendBinary appends the binary encoding of e's properties to b.
func AppendBinary(b []byte, e Entity) []byte {
	names := make([]string, 0, len(e))
	for name := range e {
		names = append(names, name)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		v := e[name]
		b = appendBinaryString(b, name)
		b = append(b, byte(v.Type-1))
		switch v.Type {
		case TypeString, TypeGuid:
			b = appendBinaryString(b, v.Str)
		case TypeBoolean:
			if v.Bool {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case TypeInt32, TypeInt64:
			b = binary.AppendVarint(b, v.Int)
		case TypeDouble:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float))
		case TypeDateTime:
			b = binary.AppendVarint(b, v.Time.Unix())
			b = binary.AppendUvarint(b, uint64(v.Time.Nanosecond()))
		case TypeBinary:
			b = binary.AppendUvarint(b, uint64(len(v.Bytes)))
			b = append(b, v.Bytes...)
		}
	}
	return b
}

func appendBinaryString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// BinaryReader is what ReadBinary reads from: a *bufio.Reader over a
// stream, or a *bytes.Reader over a stored value.
type BinaryReader interface {
	io.Reader
	io.ByteReader
}

// ReadBinary reads one entity's properties as AppendBinary wrote them, and
// nothing after them. Binary values of an empty length decode as empty,
// not nil.
func ReadBinary(r BinaryReader) (Entity, error) {
	n, err := readUvarint(r)
	if err != nil {
		return nil, badBinary(err, "property count")
	}
	if n > maxBinaryProps {
		return nil, fmt.Errorf("%w: %d properties", ErrBadBinary, n)
	}
	e := make(Entity, n)
	prev := ""
	for i := range n {
		name, err := readBinaryString(r)
		if err != nil {
			return nil, badBinary(err, "property name")
		}
		if i > 0 && name <= prev {
			return nil, fmt.Errorf("%w: property %q after %q, out of order", ErrBadBinary, name, prev)
		}
		prev = name
		t, err := r.ReadByte()
		if err != nil {
			return nil, badBinary(err, name)
		}
		v, err := readBinaryValue(r, Type(t)+1) // 255 wraps to the zero Type, refused
		if err != nil {
			return nil, badBinary(err, name)
		}
		e[name] = v
	}
	return e, nil
}

func readBinaryValue(r BinaryReader, t Type) (Value, error) {
	v := Value{Type: t}
	var err error
	switch t {
	case TypeString, TypeGuid:
		v.Str, err = readBinaryString(r)
	case TypeBoolean:
		var c byte
		if c, err = r.ReadByte(); err == nil && c > 1 {
			err = fmt.Errorf("boolean byte %d", c)
		}
		v.Bool = c == 1
	case TypeInt32, TypeInt64:
		v.Int, err = readVarint(r)
		if err == nil && t == TypeInt32 && v.Int != int64(int32(v.Int)) {
			err = fmt.Errorf("Int32 value %d out of range", v.Int)
		}
	case TypeDouble:
		var b [8]byte
		_, err = io.ReadFull(r, b[:])
		v.Float = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	case TypeDateTime:
		var sec int64
		var ns uint64
		if sec, err = readVarint(r); err == nil {
			ns, err = readUvarint(r)
		}
		if err == nil {
			v.Time = time.Unix(sec, int64(ns%1e9)).UTC()
			if ns >= 1e9 || v.Time.Unix() != sec {
				err = fmt.Errorf("DateTime %d s %d ns out of range", sec, ns)
			}
		}
	case TypeBinary:
		v.Bytes, err = readBinaryBytes(r)
	default:
		err = fmt.Errorf("unknown type byte %d", byte(t-1))
	}
	return v, err
}

func readBinaryString(r BinaryReader) (string, error) {
	b, err := readBinaryBytes(r)
	return string(b), err
}

// readBinaryBytes reads a length-prefixed byte string; never nil on success.
func readBinaryBytes(r BinaryReader) ([]byte, error) {
	n, err := readUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxBinaryString {
		return nil, fmt.Errorf("a string of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readUvarint reads a uvarint in its shortest form only: a longer one (a
// final 0x00 byte) would decode to the same number and re-encode shorter.
func readUvarint(r io.ByteReader) (uint64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := r.ReadByte()
		if err != nil {
			if i > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, errors.New("varint overflows 64 bits")
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, errors.New("varint not in its shortest form")
			}
			return x, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

// readVarint reads a zig-zag varint as binary.AppendVarint writes it.
func readVarint(r io.ByteReader) (int64, error) {
	ux, err := readUvarint(r)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, err
}

// badBinary wraps err as ErrBadBinary, keeping io.ErrUnexpectedEOF for a
// truncated input.
func badBinary(err error, where string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: %w", ErrBadBinary, where, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("%w: %s: %v", ErrBadBinary, where, err)
}

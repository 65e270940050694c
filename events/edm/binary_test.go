package edm_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
)

// binaryGolden is the entity of testdata/entity.bin, which the embedded
// store's codec wrote before it moved into events (commit 51fb4ee): the
// layout of every existing store file and format-1 snapshot.
func binaryGolden(t testing.TB) edm.Entity {
	guid, err := edm.Guid("0f8fad5b-d9cb-469f-a165-70867728950e")
	if err != nil {
		t.Fatal(err)
	}
	return edm.Entity{
		"Str":        edm.String("héllo, 世界 \U0001F600"),
		"StrEmpty":   edm.String(""),
		"BoolTrue":   edm.Bool(true),
		"BoolFalse":  edm.Bool(false),
		"I32Min":     edm.Int32(math.MinInt32),
		"I32Max":     edm.Int32(math.MaxInt32),
		"I64Above53": edm.Int64(1<<53 + 1),
		"I64Min":     edm.Int64(math.MinInt64),
		"DblThird":   edm.Double(1.0 / 3),
		"DblNaN":     edm.Double(math.NaN()),
		"DblNegInf":  edm.Double(math.Inf(-1)),
		"DblNegZero": edm.Double(math.Copysign(0, -1)),
		"Dt100ns":    edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)),
		"DtMin":      edm.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
		"DtMax":      edm.DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		"Guid":       guid,
		"BinEmpty":   edm.Binary([]byte{}),
		"Bin":        edm.Binary([]byte{0, 1, 2, 0xfe, 0xff}),
		"Ünïcödé_1":  edm.String("non-ASCII name"),
		"_v":         edm.Int64(7),
	}
}

func readGolden(t testing.TB) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "entity.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameBits compares entities exactly: NaN payloads and -0 included.
func sameBits(a, b edm.Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for n, v := range a {
		w, ok := b[n]
		if !ok || v.Type != w.Type {
			return false
		}
		if v.Type == edm.TypeDouble {
			if math.Float64bits(v.Float) != math.Float64bits(w.Float) {
				return false
			}
			continue
		}
		if !v.Equal(w) {
			return false
		}
	}
	return true
}

func TestBinaryGolden(t *testing.T) {
	want := readGolden(t)
	e := binaryGolden(t)
	if got := edm.AppendBinary(nil, e); !bytes.Equal(got, want) {
		t.Fatalf("AppendBinary differs from testdata/entity.bin:\n got  %x\n want %x", got, want)
	}
	for name, r := range map[string]edm.BinaryReader{
		"bytes":  bytes.NewReader(want),
		"stream": bufio.NewReader(io.MultiReader(bytes.NewReader(want[:7]), bytes.NewReader(want[7:]))),
	} {
		got, err := edm.ReadBinary(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !sameBits(got, e) {
			t.Fatalf("%s: decoded %#v, want %#v", name, got, e)
		}
		if got["BinEmpty"].Bytes == nil {
			t.Errorf("%s: an empty Binary decodes as nil", name)
		}
	}
}

// Only the canonical encoding decodes: what AppendBinary never writes is
// refused, so every stored value has one encoding.
func TestBinaryRejects(t *testing.T) {
	one := func(name string, typ edm.Type, value ...byte) []byte {
		b := []byte{1, byte(len(name))}
		b = append(b, name...)
		b = append(b, byte(typ-1)) // the type byte is the Type less one
		return append(b, value...)
	}
	tests := map[string][]byte{
		"empty":                  nil,
		"boolean 2":              one("b", edm.TypeBoolean, 2),
		"boolean 255":            one("b", edm.TypeBoolean, 0xff),
		"int32 out of range":     one("i", edm.TypeInt32, 0x80, 0x80, 0x80, 0x80, 0x10),
		"varint not shortest":    one("i", edm.TypeInt64, 0x80, 0x00),
		"varint overflow":        one("i", edm.TypeInt64, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"nanoseconds 1e9":        one("t", edm.TypeDateTime, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03),
		"unknown type":           one("x", edm.TypeBinary+1, 0),
		"truncated double":       one("d", edm.TypeDouble, 1, 2, 3),
		"truncated string":       one("s", edm.TypeString, 5, 'a'),
		"names out of order":     {2, 1, 'b', byte(edm.TypeBoolean - 1), 0, 1, 'a', byte(edm.TypeBoolean - 1), 0},
		"name twice":             {2, 1, 'a', byte(edm.TypeBoolean - 1), 0, 1, 'a', byte(edm.TypeBoolean - 1), 1},
		"too many properties":    {0x81, 0x10},
		"string over the bound":  one("s", edm.TypeString, 0x80, 0x80, 0x80, 0x08),
		"count beyond the input": {3, 1, 'a', byte(edm.TypeBoolean - 1), 0},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := edm.ReadBinary(bytes.NewReader(in))
			if !errors.Is(err, edm.ErrBadBinary) {
				t.Fatalf("ReadBinary(%x) = %v, want ErrBadBinary", in, err)
			}
		})
	}
	if _, err := edm.ReadBinary(bytes.NewReader(readGolden(t)[:40])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzReadBinary: decoding never panics, fails only with ErrBadBinary, and
// what decodes re-encodes to exactly the bytes read.
func FuzzReadBinary(f *testing.F) {
	f.Add(readGolden(f))
	f.Add([]byte{0})
	f.Add([]byte{1, 1, 'b', byte(edm.TypeBoolean - 1), 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		e, err := edm.ReadBinary(r)
		if err != nil {
			if !errors.Is(err, edm.ErrBadBinary) {
				t.Fatalf("error %v does not wrap ErrBadBinary", err)
			}
			return
		}
		read := in[:len(in)-r.Len()]
		if again := edm.AppendBinary(nil, e); !bytes.Equal(again, read) {
			t.Fatalf("re-encoding differs:\n in   %x\n out  %x", read, again)
		}
	})
}

package events_test

import (
	"testing"

	"github.com/tablejournal/tablejournal/events"
)

// benchCommands are the commands the codec benchmarks encode and decode:
// the SPEC example, a typical command of several ops, and all eight types
// with a 64 KiB binary.
var benchCommands = []string{"spec-example", "multi-op", "all-types"}

func benchEncode(b *testing.B, marshal func(*events.Command) ([]byte, error)) {
	for _, name := range benchCommands {
		c := golden[name]
		b.Run(name, func(b *testing.B) {
			data, err := marshal(c)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := marshal(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchDecode(b *testing.B, marshal func(*events.Command) ([]byte, error), unmarshal func([]byte) (*events.Command, error)) {
	for _, name := range benchCommands {
		data, err := marshal(golden[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := unmarshal(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMarshalMsgpack(b *testing.B) { benchEncode(b, events.MarshalMsgpack) }
func BenchmarkMarshalJSON(b *testing.B)    { benchEncode(b, events.MarshalJSON) }

func BenchmarkUnmarshalMsgpack(b *testing.B) {
	benchDecode(b, events.MarshalMsgpack, events.UnmarshalMsgpack)
}

func BenchmarkUnmarshalJSON(b *testing.B) {
	benchDecode(b, events.MarshalJSON, events.UnmarshalJSON)
}

func BenchmarkValidate(b *testing.B) {
	for _, name := range benchCommands {
		c := golden[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package replay_test

import (
	"fmt"

	"github.com/tablejournal/tablejournal/replay"
)

// A point names a position of the journal by sequence, time or command ID;
// Source.Resolve turns it into the journal sequence whose prefix the
// state at the point is.
func ExampleParsePoint() {
	for _, s := range []string{"1234", "seq:1234", "2026-11-21T10:00:00Z", "cmd:01JD3X9Q7ZBGN0V0W4Q6T8Y2KE", "undo-c1-0", "head", "99999999999999999999"} {
		p, err := replay.ParsePoint(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(p)
	}
	// Output:
	// seq:1234
	// seq:1234
	// time:2026-11-21T10:00:00Z
	// cmd:01JD3X9Q7ZBGN0V0W4Q6T8Y2KE
	// cmd:undo-c1-0
	// head
	// bad journal point: "99999999999999999999": a journal sequence is at most 18446744073709551615
}

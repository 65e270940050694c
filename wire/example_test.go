package wire_test

import (
	"fmt"

	"github.com/tablejournal/tablejournal/wire"
)

// A client in any language publishes a command to journal.<table>.<pk-token>,
// the partition key in unpadded base64url.
func ExampleJournalSubject() {
	fmt.Println(wire.JournalSubject("orders", "customer-42"))
	// Output: journal.orders.Y3VzdG9tZXItNDI
}

// The stream stores it under journal.<table>.<shard>.<pk-token>.
func ExampleParseJournalSubject() {
	table, shard, pk, err := wire.ParseJournalSubject("journal.orders.11.Y3VzdG9tZXItNDI")
	fmt.Println(table, shard, pk, err)
	fmt.Println(wire.ShardFilter(11))
	fmt.Println(wire.PartitionFilter("orders", "customer-42"))
	// Output:
	// orders 11 customer-42 <nil>
	// journal.*.11.*
	// journal.orders.*.Y3VzdG9tZXItNDI
}

package tablejournaltest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p, err := tablejournaltest.Start(ctx, tablejournaltest.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	c, err := tj.Connect(ctx, p.URL(), tj.WithStore(p.Store()))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	o, err := c.Apply(ctx, tj.NewCommand("orders", "customer-42").Insert("order-7", tj.Entity{}))
	fmt.Println(o.Status, err)
	// Output: applied <nil>
}

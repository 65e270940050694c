package events_test

import (
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// A service builds a command, validates it, and encodes it for the
// journal; the projector decodes and validates it again.
func Example() {
	ifVersion := int64(3)
	c := &events.Command{
		ID:    "01JD3X9Q7ZBGN0V0W4Q6T8Y2KE",
		Table: "orders",
		PK:    "customer-42",
		Ops: []events.RowOp{
			{Op: events.OpUpsert, RK: "order-7", Entity: edm.Entity{
				"status": edm.String("shipped"),
				"total":  edm.Double(12),
				"qty":    edm.Int64(9007199254740993),
			}},
			{Op: events.OpDelete, RK: "order-6", IfVersion: &ifVersion},
		},
		Meta: map[string]string{"correlationId": "c-991"},
	}
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	data, err := events.Encode(c, wire.ContentTypeJSON)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(data))

	got, err := events.Decode(data, wire.ContentTypeJSON)
	if err == nil {
		err = got.Validate()
	}
	fmt.Println(err, got.Equal(c), got.Ops[0].Entity["total"].Type)
	// Output:
	// {"id":"01JD3X9Q7ZBGN0V0W4Q6T8Y2KE","table":"orders","pk":"customer-42","ops":[{"op":"upsert","rk":"order-7","entity":{"qty":"9007199254740993","qty@odata.type":"Edm.Int64","status":"shipped","total":12,"total@odata.type":"Edm.Double"}},{"op":"delete","rk":"order-6","ifVersion":3}],"meta":{"correlationId":"c-991"}}
	// <nil> true Edm.Double
}

// Any bad input, found while decoding or by Validate, is a
// *rules.ValidationError wrapping rules.ErrInvalid that names the field and the rule.
func ExampleValidationError() {
	_, err := events.UnmarshalJSON([]byte(`{"id":"c1","table":"orders","pk":"p","ops":[
		{"op":"upsert","rk":"r","entity":{"qty":"12x","qty@odata.type":"Edm.Int64"}}]}`))
	var ve *rules.ValidationError
	if errors.Is(err, rules.ErrInvalid) && errors.As(err, &ve) {
		fmt.Println(ve.Rule == rules.BadInt64, ve.Field)
	}
	fmt.Println(err)

	c := &events.Command{ID: "c2", Table: "orders", PK: "p", Ops: []events.RowOp{
		{Op: events.OpUpsert, RK: "order#7", Entity: edm.Entity{}},
	}}
	fmt.Println(c.Validate())
	// Output:
	// true ops[0].entity["qty"]
	// ops[0].entity["qty"]: rule bad-int64: "12x" is not a decimal integer
	// ops[0].rk: rule key-forbidden-char: contains '#' at byte 5
}

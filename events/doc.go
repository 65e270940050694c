// Package events defines the commands that services publish into the journal:
// a command ID, one table, one partition key and 1..N row operations carrying
// typed entity values of the eight Azure Table (EDM) types.
//
// It holds the two wire codecs (MessagePack, the default, and JSON in the
// Azure Tables OData minimal-metadata entity form) and the validation of every
// limit in SPEC §2. It does no I/O.
package events

// Package decide is the projector's pure decision: given a partition's
// rows as the table holds them (rows.State per RowKey) and its fence, which
// of a run of journal entries apply, are rejected (with the code and rule
// of SPEC §5), are duplicates or were handled before (Skipped), and what
// one transaction writes for them (Txn.TxOps: version rows, tips and
// tombstones, SPEC §4). It reads no clock and does no I/O: the driver in
// package projection reads the rows and the fence, hands them to a Txn, and
// commits what it decided.
//
// Its tests are data-driven (testdata/apply, in the style of Pebble's): a
// change of behaviour is a reviewed diff of a text file.
package decide

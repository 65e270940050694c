// Package storetest is the conformance suite that every store.Store backend
// passes, written once and run against each backend (as Watermill's
// tests.TestPubSub is for its Pub/Subs):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return open(t) }, storetest.Quirks{})
//	}
//
// Run checks the semantics of Azure Tables that tablejournal relies on:
// exact round-trips of the eight EDM types, key order (UTF-16 code units, see
// store.CompareKeys), range scans, filters and paging with continuation,
// conditional writes with etags, all-or-nothing transactions within one
// partition, Azure's limits, and table management, including under
// concurrency. Every subtest works in its own freshly named table, so a
// backend may share one server across subtests.
//
// A backend declares a documented difference from Azure in Quirks; the
// embedded store passes with the zero Quirks. Bench holds the benchmark
// bodies, likewise shared.
//
// Paging wraps a real store to page as Azure does (a scan budget per
// request, pages empty but for a continuation), for the tests of every
// reader above the seam; RunPaged runs the suite through it.
package storetest

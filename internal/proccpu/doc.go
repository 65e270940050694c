// Package proccpu reads the CPU time this process has used, for the
// benchmarks that report CPU per command beside wall time.
package proccpu

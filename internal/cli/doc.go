// Package cli holds the command-line front ends of tablejournal: flag
// parsing into the packages' configs, connection setup from flags and
// environment, and output. Each cmd/*/main.go only calls one Run function
// here, so the commands are testable with injected arguments and writers.
package cli

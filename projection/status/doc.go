// Package status is the projectors' status bucket: running instances
// write a report of each shard they apply ([Publish]), and anyone reads the
// state of every shard from NATS alone ([Read]), without a table store or
// the projector.
package status

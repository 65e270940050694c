// Package wirejson appends JSON values to a byte slice exactly as
// encoding/json's Marshal writes them, without reflection or a value per
// call: for the messages the projector publishes per command (outcomes and
// change events), whose bytes stay what json.Marshal made of them.
package wirejson

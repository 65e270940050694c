//go:build race

package projection_test

// raceSlowdown scales the wall-clock limits that projector processes must
// keep: a -race binary (the child projectors are this test binary) runs
// several times slower.
const raceSlowdown = 3

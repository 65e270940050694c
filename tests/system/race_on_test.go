//go:build race

package system_test

// raceBuild builds the binaries under test with -race when the tests run
// under -race, so that their timings compare with the tests' own.
const raceBuild = true

// raceSlowdown scales the wall-clock limits that projector processes must
// keep: a -race binary runs several times slower.
const raceSlowdown = 3

//go:build !race

package projection_test

// raceSlowdown: see race_on_test.go.
const raceSlowdown = 1

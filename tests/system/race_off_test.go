//go:build !race

package system_test

// raceBuild: see race_on_test.go.
const raceBuild = false

// raceSlowdown: see race_on_test.go.
const raceSlowdown = 1

//go:build race

package gcfloor

// raceEnabled: under the race detector an allocation writes the shadow
// memory of its range, so the reserve would be gigabytes written.
const raceEnabled = true

//go:build race

package racedetect

// Enabled is true in a binary built with -race.
const Enabled = true

// Package racedetect says whether the binary was built with the race
// detector (go test -race), for the few long statistical tests that skip
// themselves under it.
//
// Those tests (privacy audits and accuracy checks of mechanisms with
// hundreds of thousands of noise draws) run single-goroutine arithmetic in
// which the race detector has nothing to find, and it makes them ten times
// slower. `go test ./...` runs them as always; CI's `go test -race ./...`
// skips them, and .ci/run runs them again without -race, so every check
// still runs on every CI run.
package racedetect

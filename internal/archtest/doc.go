// Package archtest holds the repository's architecture tests: every package
// has a doc comment, dependencies point down the layers of ARCHITECTURE.md,
// and the pure layers (algorithms and protocol cores) import no driver, no
// network, no global randomness and no wall clock; the named cuts between
// packages stay cut; public packages expose no internal type; and no
// tracked file speaks of the development history. It has no API; run
// `go test ./internal/archtest`. When a new package is added, give it a layer
// in the table in arch_test.go.
package archtest

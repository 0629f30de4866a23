//go:build !race

package cma

const raceEnabled = false

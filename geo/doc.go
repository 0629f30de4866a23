// Package geo owns overworld's latency data and latency models: the Matrix
// type (latencies in ms between named endpoints), loaders for the real data
// sets embedded in the binary (PlanetLab all-pairs RTT, WonderNetwork
// city-to-city pings, GeoNames cities), the player-population model that
// places players in real cities and derives their RTT to server cities, and
// great-circle geometry. Topology generators live in geo/topo.
//
// Everything here is a pure function of its inputs: randomness comes from a
// caller's seeded *rand.Rand, and no function reads files outside the
// embedded data unless the caller passes a reader or a path.
package geo

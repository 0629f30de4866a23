// Package geo owns overworld's latency data and latency models: the Matrix
// type (latencies in ms between named endpoints), loaders for the real data
// sets embedded in the binary (PlanetLab all-pairs RTT, WonderNetwork
// city-to-city pings, GeoNames cities), the player-population model that
// places players in real cities and derives their RTT to server cities, and
// great-circle geometry. Topology generators live in geo/topo.
//
// Embedded data (geo/data, written by cmd/gendata; sources, licences
// and required citations in geo/data/NOTICE.md):
//
//   - PlanetLab(slice): 18 time slices of RTT between 490 PlanetLab hosts
//     (Zhu et al., IEEE/ACM ToN 2017; MIT), bit-exact;
//   - WonderNetwork(): average and minimum RTT between servers in 242 cities
//     (WonderNetwork, compiled by ConsenSys; Apache-2.0), 57,807 of the
//     58,322 directed pairs measured;
//   - GeoNamesCities(): the 4,410 cities of 100,000+ people (GeoNames;
//     CC BY 4.0).
//
// Each is decoded on first use and cached. The same formats can be read
// from any io.Reader with ReadPlanetLab, ReadWonderCities, ReadWonderPings,
// ReadGeoNames and ReadMatrixCSV; their errors are *ParseError values that
// name the line, column and field.
//
// The player-population model (Population) draws players from cities in
// proportion to their population and gives each one's RTT to a server city
// as the measured RTT from its nearest WonderNetwork city plus an access
// term fitted on the data; EvaluateHoldout measures it on held-out cities.
//
// Everything here is a pure function of its inputs: randomness comes from a
// caller's seeded *rand.Rand, and no function reads files outside the
// embedded data unless the caller passes a reader.
package geo

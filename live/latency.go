package live

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// Latency returns the per-destination delay of WAN emulation: node self is
// in city self, each peer in cities[peer] (WonderNetwork city names, as
// geo.WonderNetwork lists them), and a packet from self to a peer waits the
// one-way delay between the two cities: half the measured RTT, with
// missing measurements filled in as geo.WonderNetworkSites fills them (the
// simulator's table for the same cities). Two nodes in one city get the
// same-site delay, geo.SameSiteDelay (the simulator's default).
// The returned function is safe for concurrent use.
func Latency(self wire.NodeID, cities map[wire.NodeID]string) (func(to wire.NodeID) time.Duration, error) {
	if _, ok := cities[self]; !ok {
		return nil, fmt.Errorf("%w: latency emulation: node %d has no city", ErrConfig, self)
	}
	distinct := map[string]bool{}
	for _, c := range cities {
		distinct[c] = true
	}
	names := slices.Sorted(maps.Keys(distinct))
	sites, err := geo.WonderNetworkSites(names)
	if err != nil {
		return nil, fmt.Errorf("%w: latency emulation: %w", ErrConfig, err)
	}
	from, _ := sites.Index(cities[self])
	delay := make(map[wire.NodeID]time.Duration, len(cities))
	for id, c := range cities {
		to, _ := sites.Index(c)
		if to == from {
			delay[id] = geo.SameSiteDelay
		} else {
			delay[id] = sites.OneWay(from, to)
		}
	}
	return func(to wire.NodeID) time.Duration { return delay[to] }, nil
}

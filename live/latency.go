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
	between, err := Delays(cities)
	if err != nil {
		return nil, err
	}
	delay := make(map[wire.NodeID]time.Duration, len(cities))
	for id := range cities {
		delay[id] = between(self, id)
	}
	return func(to wire.NodeID) time.Duration { return delay[to] }, nil
}

// Delays returns the one-way delay between any two nodes of cities
// (WonderNetwork city names), as Latency computes it: 0 for a node not
// in cities. The daemon hands it to the node core's failover (backup and
// witness choice) when it emulates latency. The returned function is safe
// for concurrent use.
func Delays(cities map[wire.NodeID]string) (func(a, b wire.NodeID) time.Duration, error) {
	distinct := map[string]bool{}
	for _, c := range cities {
		distinct[c] = true
	}
	names := slices.Sorted(maps.Keys(distinct))
	sites, err := geo.WonderNetworkSites(names)
	if err != nil {
		return nil, fmt.Errorf("%w: latency emulation: %w", ErrConfig, err)
	}
	site := make(map[wire.NodeID]int, len(cities))
	for id, c := range cities {
		site[id], _ = sites.Index(c)
	}
	return func(a, b wire.NodeID) time.Duration {
		sa, oka := site[a]
		sb, okb := site[b]
		switch {
		case !oka || !okb:
			return 0
		case sa == sb:
			return geo.SameSiteDelay
		}
		return sites.OneWay(sa, sb)
	}, nil
}

package arena

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Quake-derived constants (sources in the package comment).
const (
	// UnitsPerMetre converts Quake map units to arena metres: a Quake
	// player is 56 units (about 1.75 m) tall, so 32 units ≈ 1 m.
	UnitsPerMetre = 32
	// Frame is the frame time: 10 frames per second, the Quake II server
	// rate the paper measures (§2.1).
	Frame = 100 * time.Millisecond
	// RunSpeed is Quake III's g_speed, 320 units/s = 10 m/s.
	RunSpeed = 320.0 / UnitsPerMetre
	// Diameter16 is the diameter (side) of a 16-player Quake III map in
	// metres: 4096 units. The paper's own numbers give it: players move at
	// 320 units/s and cover a median 15 regions of a 20-region-wide map in
	// 10 s, so the map is about 20 × 3200/15 ≈ 4270 units across.
	Diameter16 = 4096.0 / UnitsPerMetre
	// RegionSize is the side of one "region", the bucket of the paper's
	// path-length measure (the map is 20 regions in diameter).
	RegionSize = Diameter16 / 20
)

// MapType is the shape of a map (§4.2 of the paper).
type MapType int

// Map types.
const (
	// Sqr maps grow both sides with the player count.
	Sqr MapType = iota + 1
	// Rect maps are always Diameter16 high and grow in width only (a
	// linearisation of a larger map).
	Rect
)

// String returns "sqr" or "rect".
func (m MapType) String() string {
	switch m {
	case Sqr:
		return "sqr"
	case Rect:
		return "rect"
	}
	return fmt.Sprintf("MapType(%d)", int(m))
}

// ParseMapType parses "sqr" or "rect".
func ParseMapType(s string) (MapType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "sqr":
		return Sqr, nil
	case "rect":
		return Rect, nil
	}
	return 0, fmt.Errorf("%w: map type %q: want sqr or rect", ErrConfig, s)
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("arena: bad configuration")

// MaxPlayers bounds Config.Players: the map, its waypoint graph and the
// objects take about 3 KB per player.
const MaxPlayers = 200_000

// Config is one model-workload game: how many nodes, how many players per
// node, the map type and the seed, plus the game's tunables. Start from a
// preset (P2P, Federated, Quake16) and change fields; Validate fills the
// zero tunables with their defaults.
type Config struct {
	// Map is the map shape.
	Map MapType
	// Nodes is the number of nodes (servers or player machines).
	Nodes int
	// PlayersPerNode is the number of bots whose primary starts on each
	// node: 1 is the paper's peer-to-peer scenario, 8 its federated one.
	PlayersPerNode int
	// Seed determines the map, the spawn points and, in Local, every
	// random choice of the game.
	Seed uint64

	// Interest is the half-width (m) of a bot's interest box. Default
	// 20 m: a 40 m × 40 m square, a tenth of a 16-player map's area (the
	// paper uses the median interest size of Quake II and III maps but
	// does not print it; see the package comment).
	Interest float64
	// FightRange is the distance (m) within which a bot may engage an
	// opponent it can see. Default: Interest.
	FightRange float64
	// PEngage is the probability that a bot that sees an opponent within
	// FightRange engages it, per scan (a scan every ScanEvery). Default 0.5.
	PEngage float64
	// PDisengage is the probability of leaving a fight per scan even
	// though the opponent is still in sight. Default 0.1 (a fight lasts
	// about 5 s unless someone dies).
	PDisengage float64
	// ScanEvery is how often a bot looks for opponents (its reaction
	// time). Default 500 ms.
	ScanEvery time.Duration
	// PLinger is the probability of lingering at a destination waypoint.
	// Default 0.3.
	PLinger float64
	// Linger is the longest linger; a linger lasts uniformly between 0
	// and Linger. Default 2 s.
	Linger time.Duration
	// ItemsPerPlayer is the number of items per player (a Quake III
	// 16-player map has about 24 items). Default 1.5.
	ItemsPerPlayer float64
	// PRelocate is the probability that an item respawns at another
	// waypoint instead of its own. Default 0.1.
	PRelocate float64
	// Zipf is the exponent s of waypoint popularity: the k-th most
	// popular waypoint of a Diameter16 tile has weight 1/k^s. Default 1
	// (Zipf-like, as in the paper's Quake III traces); a larger value
	// (up to MaxZipf) crowds the bots onto fewer hot spots, a skewed
	// workload for load balancing.
	Zipf float64
	// TileZipf is the exponent t of tile popularity: the Diameter16 tiles
	// are ranked at random and the weights of the j-th most popular tile's
	// waypoints are scaled by 1/j^t. Default 0: every tile alike, so the
	// player density is the same everywhere (the model workload). A
	// positive value (up to MaxZipf) makes a few tiles hot spots of the
	// whole map: spawns and respawns, drawn by weight over the map, crowd
	// there, and bots nearby are drawn to them.
	TileZipf float64
}

// MaxZipf bounds Config.Zipf and Config.TileZipf.
const MaxZipf = 8

// P2P returns the paper's peer-to-peer configuration: one player per node.
func P2P(nodes int, m MapType) Config {
	return Config{Map: m, Nodes: nodes, PlayersPerNode: 1, Seed: 1}
}

// Federated returns the paper's federated-server configuration: eight
// players per node.
func Federated(nodes int, m MapType) Config {
	return Config{Map: m, Nodes: nodes, PlayersPerNode: 8, Seed: 1}
}

// Quake16 returns a 16-player game on one node on a 16-player square map,
// the size of the Quake III maps behind the paper's Figs. 2 and 6 (used by
// the mobility validation).
func Quake16() Config {
	return Config{Map: Sqr, Nodes: 1, PlayersPerNode: 16, Seed: 1}
}

// Players returns the number of bots.
func (c Config) Players() int { return c.Nodes * c.PlayersPerNode }

// Validate returns a copy of c with zero tunables set to their defaults, or
// an error wrapping ErrConfig that names the first bad field.
func (c Config) Validate() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Map != Sqr && c.Map != Rect {
		return bad("Map %v: want Sqr or Rect", c.Map)
	}
	if c.Nodes < 1 {
		return bad("Nodes %d: want at least 1", c.Nodes)
	}
	if c.PlayersPerNode < 1 {
		return bad("PlayersPerNode %d: want at least 1", c.PlayersPerNode)
	}
	if c.Nodes > MaxPlayers || c.PlayersPerNode > MaxPlayers || c.Players() > MaxPlayers {
		return bad("%d nodes × %d players per node: want at most %d players", c.Nodes, c.PlayersPerNode, MaxPlayers)
	}
	if c.Nodes > math.MaxUint32 {
		return bad("Nodes %d: want at most %d", c.Nodes, uint32(math.MaxUint32))
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Interest, 20)
	def(&c.FightRange, c.Interest)
	def(&c.PEngage, 0.5)
	def(&c.PDisengage, 0.1)
	def(&c.PLinger, 0.3)
	def(&c.ItemsPerPlayer, 1.5)
	def(&c.PRelocate, 0.1)
	def(&c.Zipf, zipfExponent)
	if c.ScanEvery == 0 {
		c.ScanEvery = 500 * time.Millisecond
	}
	if c.Linger == 0 {
		c.Linger = 2 * time.Second
	}
	for _, f := range []struct {
		name   string
		v      float64
		lo, hi float64
	}{
		{"Interest", c.Interest, 1, 1000},
		{"FightRange", c.FightRange, 1, 1000},
		{"PEngage", c.PEngage, 0, 1},
		{"PDisengage", c.PDisengage, 0, 1},
		{"PLinger", c.PLinger, 0, 1},
		{"ItemsPerPlayer", c.ItemsPerPlayer, 0, 100},
		{"PRelocate", c.PRelocate, 0, 1},
		{"Zipf", c.Zipf, 0.1, MaxZipf},
		{"TileZipf", c.TileZipf, 0, MaxZipf},
	} {
		if !(f.v >= f.lo && f.v <= f.hi) {
			return bad("%s %v: want %g to %g", f.name, f.v, f.lo, f.hi)
		}
	}
	if c.ScanEvery < Frame || c.ScanEvery > time.Minute {
		return bad("ScanEvery %v: want %v to 1m", c.ScanEvery, Frame)
	}
	if c.Linger < 0 || c.Linger > time.Hour {
		return bad("Linger %v: want 0 to 1h", c.Linger)
	}
	return c, nil
}

// MinSide is the shortest side of a map (m): games of very few players get
// a quarter of a 16-player map's diameter rather than a corridor.
const MinSide = Diameter16 / 4

// Size returns the map's width and height in metres for n players at the
// density of a full 16-player Quake III map (16 players per Diameter16²),
// each side at least MinSide.
func Size(m MapType, n int) (w, h float64) {
	switch m {
	case Rect:
		return max(MinSide, Diameter16*float64(n)/16), Diameter16
	default:
		s := max(MinSide, Diameter16*math.Sqrt(float64(n)/16))
		return s, s
	}
}

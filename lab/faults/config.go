package faults

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/harness"
)

// Config is one fault run: the world (the model game on the harness),
// the fault schedule drawn from Seed, the network's faults, and the
// budget a failover has.
type Config struct {
	// Arch is the discovery architecture. Default directory.
	Arch discovery.Arch
	// Nodes is the number of player nodes (2 to 1000). Default 16.
	Nodes int
	// PlayersPerNode is the number of bots per node. Default 8.
	PlayersPerNode int
	// Map is the map shape. Default rect.
	Map arena.MapType
	// Slice is the PlanetLab time slice the sites are drawn from (1..18).
	// Default 1.
	Slice int
	// Seed seeds the world, the network and the fault schedule.
	Seed uint64
	// Duration is the game time to simulate (5 s to 1 h). Default 60 s.
	Duration time.Duration
	// Migrations is the number of random migrations (a random primary of
	// a random live node to a random other live node), at random times
	// spread over the run. Default 100; 0: none.
	Migrations int
	// Crashes is the number of node crashes, each followed by a restart
	// RestartAfter later; a crash happens only when no node is down, no
	// partition is on and the previous failover settled (every object has
	// a primary on a live node, and every primary a backup). Default 2.
	Crashes int
	// RestartAfter is how long a crashed node stays down. Default 3 s.
	RestartAfter time.Duration
	// Partitions is the number of network partitions (the player nodes
	// cut into two random sides for 0.5 to 2 s), only when no node is
	// down. Default 0.
	Partitions int
	// Loss, Duplicate, Reorder (probabilities in [0, 1)) and Jitter (the
	// mean of an exponential extra delay) configure the emulated network
	// (geo.Network). Default none.
	Loss, Duplicate, Reorder float64
	Jitter                   time.Duration
	// WriteRate is the writes by ID per second of game time (node.WriteTo
	// from a random live node to a random bot whose primary is on another
	// node, adding one to its deaths counter). Default 4; 0: none.
	WriteRate float64
	// FailoverBudget is how long an object may be without a primary on a
	// live node (objects_lost). Default 1.5 s.
	FailoverBudget time.Duration
	// NoFailover turns warm backups and failover off (the steady-state
	// cost baseline); crashes then lose their node's objects.
	NoFailover bool
}

// DefaultConfig returns 16 nodes × 8 bots on a rect map under the
// directory architecture for 60 s, with 100 migrations, 2 crashes with
// restarts, 4 writes per second, no partition and a perfect network,
// seed 1.
func DefaultConfig() Config {
	return Config{Arch: discovery.Directory, Nodes: 16, PlayersPerNode: 8, Map: arena.Rect, Slice: 1, Seed: 1,
		Duration: 60 * time.Second, Migrations: 100, Crashes: 2, RestartAfter: 3 * time.Second, WriteRate: 4,
		FailoverBudget: 1500 * time.Millisecond}
}

// Limits of a run.
const (
	maxNodes      = 1000
	maxMigrations = 1_000_000
	maxCrashes    = 10_000
)

// Validate returns a copy of c with the zero fields of the world (Arch,
// Nodes, PlayersPerNode, Map, Slice, Duration) and of RestartAfter and
// FailoverBudget set to their defaults (zero Migrations, Crashes,
// Partitions and WriteRate mean none), or an error wrapping lab.ErrConfig naming the first bad
// field.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	if c.Arch == "" {
		c.Arch = d.Arch
	}
	if c.Nodes == 0 {
		c.Nodes = d.Nodes
	}
	if c.PlayersPerNode == 0 {
		c.PlayersPerNode = d.PlayersPerNode
	}
	if c.Map == 0 {
		c.Map = d.Map
	}
	if c.Slice == 0 {
		c.Slice = d.Slice
	}
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.RestartAfter == 0 {
		c.RestartAfter = d.RestartAfter
	}
	if c.FailoverBudget == 0 {
		c.FailoverBudget = d.FailoverBudget
	}
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	if _, err := discovery.ParseArch(string(c.Arch)); err != nil {
		return bad("architecture %q: want directory, broadcast, client-server or colyseus", c.Arch)
	}
	switch {
	case c.Nodes < 2 || c.Nodes > maxNodes:
		return bad("nodes %d: want 2 to %d (a crash needs a node to fail over to)", c.Nodes, maxNodes)
	case c.Duration < 5*time.Second || c.Duration > time.Hour:
		return bad("duration %v: want 5s to 1h", c.Duration)
	case c.Migrations < 0 || c.Migrations > maxMigrations:
		return bad("migrations %d: want 0 to %d", c.Migrations, maxMigrations)
	case c.Crashes < 0 || c.Crashes > maxCrashes:
		return bad("crashes %d: want 0 to %d", c.Crashes, maxCrashes)
	case c.Partitions < 0 || c.Partitions > maxCrashes:
		return bad("partitions %d: want 0 to %d", c.Partitions, maxCrashes)
	case c.RestartAfter < 0 || c.RestartAfter > time.Minute:
		return bad("restart after %v: want up to 1m", c.RestartAfter)
	case !(c.WriteRate >= 0 && c.WriteRate <= 10_000):
		return bad("write rate %v per second: want 0 to 10000", c.WriteRate)
	case c.FailoverBudget <= 0 || c.FailoverBudget > time.Minute:
		return bad("failover budget %v: want more than 0, at most 1m", c.FailoverBudget)
	case c.Crashes > 0 && c.Nodes < 3 && !c.NoFailover:
		return bad("%d crashes on %d nodes: failover needs at least 3 nodes (a witness besides the backup)", c.Crashes, c.Nodes)
	}
	if _, err := c.arena().Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// arena returns the harness configuration of the run's world.
func (c Config) arena() harness.ArenaConfig {
	w := harness.DefaultArenaConfig()
	w.Arch, w.Nodes, w.PlayersPerNode, w.Map, w.Slice, w.Seed, w.Duration = c.Arch, c.Nodes, c.PlayersPerNode, c.Map, c.Slice, c.Seed, c.Duration
	w.Loss, w.Duplicate, w.Jitter, w.Reorder = c.Loss, c.Duplicate, c.Jitter, c.Reorder
	w.Failover = !c.NoFailover
	w.Workers = 1
	return w
}

// Package arena is the model game of overworld: the workload of Colyseus
// (Bharambe et al., NSDI 2006, §2.3 and §4.1) as a real game written on the
// world API, played by bots. It is also the worked example of that API.
//
// # The game
//
// A map (Map, NewMap) is a rectangle with random axis-aligned obstacles
// (walls from floor to ceiling) and a waypoint graph: waypoints thrown at
// random in free space at least 6 m apart, joined when closer than 15 m and
// the straight line between them keeps BotRadius clear of every obstacle;
// only the largest connected component is kept. Bots move only along graph
// edges, so they never enter an obstacle or leave the map. This stands in
// for the paper's obstacle-sensitive Voronoi mobility model [Jardosh et
// al., MobiCom 2003]: both move players along obstacle-free corridors
// between popular places, by shortest paths.
//
// Popularity is Zipf-like, as the paper observed in Quake III (§2.3): the
// waypoints of each Diameter16 × Diameter16 tile are ranked at random and
// the k-th has weight 1/k. A bot picks its next destination among the
// waypoints within 0.6 Diameter16 with probability proportional to weight,
// walks there by the shortest path (A*), and on arrival lingers with
// probability PLinger for up to Linger. Local choice keeps the player
// density constant on large maps while each 16-player-sized tile has its own
// Zipf-like hot spots. Two knobs skew it: Config.Zipf = s gives the k-th
// waypoint of a tile 1/k^s (fewer hot spots per tile, the density per tile
// unchanged), and Config.TileZipf = t ranks the tiles too, scaling the
// j-th tile's weights by 1/j^t, so that spawns, respawns and goals crowd
// into a few tiles of the whole map (hot spots for load balancing).
//
// Every ScanEvery (its reaction time) a bot looks for opponents: a live bot
// within FightRange and in sight. It engages the nearest with probability
// PEngage; in a fight it strafes back and forth along its current edge,
// fires a rocket at the target's predicted position every FireEvery with a
// Gaussian aim error, and leaves the fight when the target dies, goes out of
// range or sight, or with probability PDisengage per scan. The paper takes
// its probabilities of entering fights and of staying at or leaving
// waypoints from traces it does not publish; ours are documented choices,
// calibrated so that path lengths match the paper's (see Mobility).
//
// Rockets (Missile) are short-lived objects attached to their shooter
// (world.Attacher): they fly straight at 900 units/s, hit the first bot
// they pass within HitRadius of (100 damage), explode on walls, splash
// bots within 120 units (up to 100 damage, linear fall-off, no
// self-damage), and expire after MissileLife. Damage is a ctx.Write on the
// victim: on a node holding only a replica of the victim it is a tentative
// write, whose health difference adds up at the primary with everyone
// else's. A bot whose health falls to 0 is dead for RespawnDelay and then
// respawns at a waypoint drawn by popularity.
//
// Items (Item) stand on waypoints, about 24 per 16-player map as in Quake
// III. A bot reaching the waypoint takes them (a write setting "taken"),
// health items heal it by 25, and the item's primary respawns it after
// Quake III's respawn time for its kind, at another nearby waypoint with
// probability PRelocate: items rarely move.
//
// # Values taken from Quake
//
// Distances are metres, 32 Quake units to the metre (a player is 56 units
// tall). Frame rate 10 Hz (Quake II servers, paper §2.1); run speed 320
// units/s (Quake III g_speed); a 16-player map is Diameter16 = 4096 units
// across, which the paper's own numbers imply (a median 15 of 20 regions in
// 10 s at 320 units/s); rocket speed 900 units/s, damage 100, splash radius
// 120 units, refire 800 ms; health 100; health bonus 25; item respawn
// 35 s (health), 25 s (armour), 5 s (weapons), 40 s (ammunition).
//
// The paper bases interests on "median interest sizes observed in Quake II
// and Quake III maps" without printing the value; Interest (default a
// 40 m × 40 m box, 1,280 units across, a tenth of a 16-player map) is
// our choice and a Config field.
//
// # Maps and workloads
//
// Maps have the density of a full 16-player Quake III map (§4.2): sqr maps
// grow both sides with the player count, rect maps are Diameter16 high and
// grow in width. A Config names the map type, the node count, the players
// per node (P2P: 1, Federated: 8) and the seed; New builds the Game
// (map, schemas, Registry) and Game.Spawns lists the bots and items to
// create on each node.
//
// # Replicated state and deltas
//
// Every object keeps all its state in its world.State, so a replica or a
// migrated primary needs nothing else (a bot's cached path is rebuilt from
// its waypoint fields). Fields are ordered by how often they change:
// positions (1/16 m) and velocities (1/8 m/s, set from the edge direction,
// so constant along an edge) first, so a moving bot's delta is a one-byte
// change mask and a byte per coordinate. Local measures the mean delta per
// kind (KindStats).
//
// # What the caller must do
//
//  1. Build the Game with New(cfg) on every node, from the same Config;
//     register Game.Registry with the runtime.
//  2. Create each Spawn's object as a primary on node Spawn.Node (with
//     ctx.Create, or Local.Spawn), before the first frame.
//  3. Run frames every Frame (100 ms of virtual time); the Context must
//     implement the world.Context semantics (Local is the reference).
//
// Everything is deterministic: the map and spawns depend only on the seed,
// and the bots draw every random choice from ctx.Rand().
package arena

// Package topo owns synthetic Internet topologies for overworld's lab: a
// small undirected weighted Graph (link delays in ms, optional plane
// coordinates and AS membership), seeded generators in the style of the
// BRITE topology generator (Waxman, Barabási–Albert, and BRITE's two-level
// top-down hierarchy), and shortest-path delays (Dijkstra) turned into
// geo.Matrix values for the placement algorithms.
//
// It exists because the papers overworld reproduces built their evaluation
// networks with BRITE (the client-to-mirror assignment paper: 5,000 nodes,
// 50 Barabási–Albert ASes of 100 Waxman routers, links uniform in [0, 25]
// ms; the core-selection paper: a flat 1,000-node Waxman topology in a
// square world of side 200 ms), and no maintained Go library generates
// BRITE-style topologies. The code is an independent implementation of the
// models as BRITE's documentation and papers describe them. The presets
// CMAPaper and CoreSelectionPaper return those two configurations.
//
// # What the caller must do
//
//  1. Pass a seeded *rand.Rand from math/rand/v2 to every generator, e.g.
//     rand.New(rand.NewPCG(seed, 0)). The package never uses global
//     randomness or the clock. The same configuration and the same seeded
//     source give the same graph, bit for bit. Arithmetic that reaches the
//     output avoids architecture-dependent results (no math.Hypot, no
//     fusable multiply-add); the one exception is math.Exp, used only to
//     weigh Waxman candidates, whose last bit may differ between
//     architectures and could, with a probability around 1e-12 per
//     topology, change one link.
//  2. Start from a preset (DefaultWaxmanConfig, DefaultBAConfig,
//     DefaultHierConfig, CMAPaper, CoreSelectionPaper) and change fields;
//     zero fields take the documented defaults, and each generator
//     validates its configuration (on a copy) before it draws anything.
//  3. Ask for the delays you need: DelayMatrix(g, players, mirrors) runs
//     Dijkstra only from the smaller side. AllPairs is for graphs of at most
//     MaxAllPairs nodes.
//  4. Know that ShortestFromMany, DelayMatrix and AllPairs run Dijkstra on
//     up to GOMAXPROCS goroutines and return when all are done; results do
//     not depend on scheduling. Generators and ShortestFrom start none.
//     Topologies are built by the lab and the simulator, not inside the
//     sans-IO protocol cores.
//
// # Models, and how they follow BRITE
//
// Node placement. Nodes are placed independently and uniformly in the
// square [0, Side)², X then Y, in index order. BRITE places nodes on an
// integer grid without collisions and also offers heavy-tailed placement;
// neither is implemented (continuous uniform placement is the limit of
// BRITE's random placement, and the papers use only "random").
//
// Waxman (BRITE's RouterWaxman). A link between u and v at distance d is
// kept with probability P(u,v) = α·exp(−d/(β·L)), where L = √2·Side is the
// largest possible distance in the plane (BRITE's choice; Waxman's paper
// uses the largest distance between actual nodes). Growth is
//
//   - GrowthIncremental (BRITE's default): node i, for i = M..N−1 in order,
//     links to M distinct nodes among 0..i−1; then each of the first M nodes
//     links to M distinct nodes among M..N−1 it is not yet linked to (fewer
//     if fewer exist). Every node of index ≥ M links to earlier nodes, so the
//     graph is connected by construction and has about N·M links (mean
//     degree ≈ 2M).
//   - GrowthAllAtOnce: repeatedly pick a uniformly random node and link it
//     to up to M nodes it is not yet linked to, stopping as soon as no node
//     is isolated. This can leave several components; BRITE then fails, we
//     instead join each smaller component to the largest by the closest
//     pair of nodes (one extra link per component, delay from the delay
//     model).
//
// BRITE realises "links to M distinct nodes" with rejection: pick a
// candidate uniformly, keep it with probability P, otherwise retry. Since
// exactly M links are kept either way, the kept candidate is distributed
// proportionally to P, and α cancels out: α only sets how many coin flips
// BRITE throws away. This package samples that conditional distribution
// directly (candidate j with probability exp(−d_j/(β·L)) / Σ_k exp(−d_k/(β·L))),
// which is the same model without the rejection loop, and keeps α in the
// configuration (validated) so that configurations read like BRITE's.
// Only β shapes a Waxman topology: small β gives short links.
//
// Barabási–Albert (BRITE's BA-1). Start from a clique of M+1 nodes; each
// further node, in index order, links to M distinct existing nodes, each
// chosen with probability proportional to its current degree (duplicates
// redrawn). Connected by construction; mean degree ≈ 2M; the degree
// distribution has a power-law tail P(k) ~ k⁻³. Nodes also get plane
// positions, used only by DelayDistance.
//
// Hierarchical (BRITE's top-down model). Build the AS-level graph with
// Barabási–Albert (HierConfig.AS), then one Waxman router-level graph per
// AS (HierConfig.Router), numbered so that AS a owns nodes [a·R, (a+1)·R).
// Every AS-level link becomes one link between a border router of each AS,
// chosen uniformly at random (BorderRandom, BRITE's default) or as the
// lowest-degree router (BorderSmallestDegree). Each AS's routers sit in
// their own copy of the plane, overlapping the others, as in BRITE. The
// result is connected because each level is.
//
// Delays. DelayUniform draws every link's delay independently in
// [Min, Max] ms (the CMA paper's [0, 25]); DelayDistance makes it
// MsPerUnit × the link's Euclidean length (the core-selection paper's
// square world measured in ms). Intra-AS links use HierConfig.Router.Delay,
// inter-AS links HierConfig.AS.Delay.
//
// The random source is consumed in a fixed order (placement, then links in
// the order above, each link's delay drawn when the link is made; for a
// hierarchy the AS level, then AS 0, 1, ..., then the border links), so a
// seed names a topology.
package topo

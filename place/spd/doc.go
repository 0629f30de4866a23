// Package spd selects the server sub-network of one game session under a
// delay bound, with fairness: which servers take part, the central server
// (client-server model) and each player's contact server, so that the
// delay bound holds, few servers are used and the delay variation (the
// spread of delays between players) is small. It implements Chen,
// Radhakrishnan, Dhall and Karabuk, "On the Game Server Network Selection
// with Delay and Delay Variation Constraints" (2011).
//
// # Model (§II)
//
// An Instance holds n servers joined by an overlay of links with one-way
// latencies, and m players with a one-way latency to every server. Overlay
// latencies are shortest paths; routes are fixed (Instance.Path: the route
// to a server is its shortest-path tree's, ties to the lower index), so a
// client-server solution is a tree and a solution's server set is
// well defined. For an assignment A (player → contact) and root r:
//
//	D_cs  = 2·max_i (d(c_i,s_ci) + d(s_ci,r))          V_cs  = 2·(max − min) of the same terms
//	D_p2p = max_{i≠j} d(c_i,s_ci) + d(s_ci,s_cj) + d(s_cj,c_j)   V_p2p = max − min over pairs i≠j
//
// exactly as §II-E/F define them (a player's delay to itself counts in CS;
// P2P pairs are distinct players, as ConstructL has them; with one player
// D_p2p = V_p2p = 0). The servers a solution uses are its contacts and
// every server on their routes to the root (CS, root included) or to each
// other (P2P) — the servers that forward its traffic.
//
// # Algorithms (§III)
//
//   - Matching: Algorithm Matching; its delay is Γ, the exact minimum
//     client-server delay (Instance.Gamma). With P2P, its assignment as a
//     P2P network (the paper's alg-mp).
//   - SPDCSH, SPDP2PH: the greedy SPD heuristics; SPDP2P-H adds the
//     servers on the routes between contact servers.
//   - ZIZO: Zoom-In Zoom-Out after Lee et al., as the paper describes it.
//   - KBest: exhaustive over the server subsets of size k.
//   - SPDVRCS: Algorithm 1 (Algorithm Chains over the sorted list L).
//   - SPDVRP2P: Algorithm 2 (ConstructL and Reassign, two phases).
//   - Exact (beyond the paper): minimises the servers, then the variation,
//     then the delay, by exhaustive search over server sets (CS: bitset
//     feasibility and Algorithm Chains, which is exact for a fixed root and
//     server set; P2P: branch and bound over contacts), for small
//     instances.
//
// # How ambiguities were decided
//
//   - Algorithm 1, line 13: δ is the best variation so far (dv); line 5
//     keeps a tuple when its round trip 2·D is within μ (the text's
//     "d_ji > μ/2 is dropped"; the listing's "D < μ" compares a one-way
//     latency with a round-trip bound). Each player takes its first
//     (lowest) tuple in the chosen chain, which keeps the chain's spread
//     and gives the least delay.
//   - Table II lists d(c_i, s_j) alone, not d(c_i,s_j) + d(s_j,D) as the
//     text defines (b through C is "43+10=53" in the text, 43 in the
//     table). The tests reproduce Tables II and III from the table's values
//     (chain 10–14, variation 4) and check the text's definition separately
//     (variation 20 ms, confirmed by exhaustive search). Ties in L are
//     ordered by the contact's distance to the root, as Table II has them.
//   - Table I: the fourth block's last column is labelled "e"; it is client
//     d's latency to E. §II-F says Fig. 3's smallest CS delay is "e to e
//     (50)": it is b's. It says the smallest P2P latency is "b and d, or a
//     and c" (64); Table IV has a, c at 87. The final assignment of the
//     SPDVR-P2P example is printed with a's and e's servers swapped; the
//     variation 18 it reports is reproduced (TestAlgorithm2Example).
//   - Fig. 1's link latencies are not in the text. The tests use the links
//     every printed number implies (A–B 9, B–C 8, B–D 12, C–D 10).
//   - Algorithm 2, lines 8–10 and 21–23 wrap a repeat of the same call in
//     "foreach s_k ∈ S"; following the text they reassign the pair's second
//     player. Reassign tries the contact servers of the input only (S').
//   - SPDCS-H: the paper does not say which root it starts from; every
//     server is tried and the fewest servers win. "A neighbour of T" is
//     generalised to any server outside T with the part of its route to the
//     root not yet in T, scored per server added (a tree neighbour adds
//     one server: the paper's rule).
//   - SPDVR-CS may use any server of the input's tree as a contact (they
//     already forward traffic); SPDVR-P2P only the input's contacts.
//   - ZIZO: s* minimises the largest player-to-s* latency (through each
//     player's best contact); zoom-out moves a contact's players one hop
//     toward s*, farthest contact first, while the bound holds.
//   - KBest: "subnetworks of size k" are server sets U with k members; a
//     contact may be used when its route to the root stays in U (P2P: the
//     routes between contacts too), so a k-best solution uses at most k
//     servers.
//   - Γ is the client-server minimum for both models (§IV uses it for
//     both). A bound below Γ is an *InfeasibleError stating Γ for every
//     algorithm that builds on client-server trees; a P2P network below Γ
//     may exist, and Exact with P2P searches for one.
//   - Delays are compared with the bound with a slack of Tolerance (1e-9
//     ms), so μ = 1.0·Γ admits Γ's own solution despite rounding. Ties
//     on variation and delay (Exact's order, Algorithm Chains' choice of
//     chain, the heuristics' choice of root) also treat values within
//     Tolerance as equal, so a rounding difference never decides one.
//
// All of the code is written for overworld from the paper's text; ZIZO
// follows the paper's description of Lee et al., not their code.
//
// # What the caller must do
//
//  1. Build an Instance with NewInstance; bad input (unknown servers, NaN,
//     negative or infinite latencies, a disconnected overlay, duplicate
//     names or links) is an ErrInput error naming the problem, and nothing
//     is built.
//  2. Choose a bound μ ≥ Γ (Instance.Gamma; §IV uses f·Γ with f ≥ 1).
//  3. Run a selection algorithm, then SPDVRCS or SPDVRP2P on its solution
//     with the same bound to lower the variation. Exact and KBest take a
//     work limit and return ErrBudget when the search would exceed it.
//
// Everything is deterministic (ties broken by index) and pure: no clock,
// no randomness, no I/O. Instances are immutable and safe for concurrent
// use; Solutions are values the caller owns.
package spd

// Package faults is "overworld lab faults": it runs the model game
// (package arena, through lab/harness) on simulated node cores with warm
// backups and failover on, drives random migrations, writes by ID, node
// crashes with restarts, and network partitions into it from a seeded
// schedule, and checks the authority invariants of node and
// internal/replica after every simulated event:
//
//   - no object the game did not delete is without a primary on a live
//     node for longer than the failover budget (objects_lost);
//   - no two live nodes hold the primary of one object at one epoch at
//     the same instant (duplicate_primaries);
//   - no write acknowledged to its writer is missing from its object's
//     surviving lineage, and none is applied twice in it
//     (acked_writes_lost, writes_applied_twice), as a ledger of the nodes'
//     authority events tells (see ledger.go).
//
// It measures the failover latency (a crash to the promotion of a backup,
// that is to a primary that accepts writes again) and the migration
// pause (a node handing an object over to the new node installing it:
// the time writes to a migrating object wait), beside the harness's
// missing replicas and per-node bandwidth. The Report is data, written as
// faults.json, per-migration and per-failover CSV files, a PNG of the two
// latency distributions and a short text table; everything in it is the
// same for the same Config (no wall-clock figure).
//
// What the caller must do: start from DefaultConfig, change fields, and
// call Run (Validate is called first and rejects bad input with an error
// wrapping lab.ErrConfig, before anything runs). The run is serial (the
// checks read every node after every event). Report.Failed lists the
// invariants that failed; a command exits non-zero on it.
package faults

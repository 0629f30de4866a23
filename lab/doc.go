// Package lab is the home of overworld's experiments: runs that reproduce
// the evaluations of the papers overworld implements, on the same kind of
// input the papers used and on the embedded real latency data, with the
// results as data, CSV files, PNG figures and text tables that put the
// paper's numbers beside ours. It holds only ErrConfig, the error every
// lab package's configuration check wraps; the work is in its packages:
//
//   - lab/harness runs any world game on N simulated nodes with the
//     ground-truth observer (missing replicas, discovery latency,
//     staleness, bandwidth); the model game (package arena) is one user,
//     and "overworld demo" its demo;
//   - lab/cma: client-to-mirror assignment (Webb and Soh, MMCN 2008, §4);
//   - lab/spd: server network selection with delay variation (Chen et
//     al. 2011, §IV);
//   - lab/balance: instances over a cluster and player hosts (the hybrid
//     cluster/P2P paper, §5);
//   - lab/region: latency estimation and core selection (the
//     region-migration paper, §6.3);
//   - lab/colyseus: Colyseus' distributed object locator, its baselines
//     and the model game's mobility (Bharambe et al., NSDI 2006);
//   - lab/faults: object authority under migrations, crashes,
//     partitions and lossy links, with its invariants checked after
//     every simulated event;
//   - lab/report (tables, CSV, figures) and lab/cities (server cities and
//     the player population) serve them all.
package lab

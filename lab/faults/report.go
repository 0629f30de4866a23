package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Schema names the format of faults.json.
const Schema = "overworld.lab.faults/1"

// Report is the outcome of a fault run: the five invariant counters, what
// the schedule did, the failover and migration latencies, and the
// harness's view and bandwidth measures. It is the same for the same
// Config. Its JSON form is faults.json.
type Report struct {
	Schema   string   `json:"schema"`
	Seed     uint64   `json:"seed"`
	Settings Settings `json:"settings"`

	// The invariants: all zero in a correct run. ObjectsLost counts the
	// objects a crash left without a primary on a live node for longer
	// than the budget although a live node kept a copy of them (a
	// failover could have saved them).
	ObjectsLost        int `json:"objects_lost"`
	AckedWritesLost    int `json:"acked_writes_lost"`
	WritesAppliedTwice int `json:"writes_applied_twice"`
	DuplicatePrimaries int `json:"duplicate_primaries"`
	// Violations describes the first failures (at most 20).
	Violations []string `json:"violations"`

	// ObjectsLostUnprotected counts the objects a crash took with no copy
	// on any live node: made (or moved to a new backup) less than a frame
	// and a trip before it, which a warm backup sent every frame cannot
	// cover. Not an invariant; reported beside it.
	ObjectsLostUnprotected int `json:"objects_lost_unprotected"`

	// Migrations counts the migrations the nodes accepted (node.Migrate
	// returned no error); MigrationsRefused those refused (no primary to
	// move, a target declared dead); MigrationsAborted those given up
	// waiting for the old backup's release. Handoffs counts objects
	// handed over (node.EvMigrated: a migrated object and what is
	// attached to it), HandoffsUninstalled those whose new node never
	// installed them (it crashed: the old node promotes its copy).
	Migrations          int `json:"migrations"`
	MigrationsRefused   int `json:"migrations_refused"`
	MigrationsAborted   int `json:"migrations_aborted"`
	Handoffs            int `json:"handoffs"`
	HandoffsUninstalled int `json:"handoffs_uninstalled"`
	StepDowns           int `json:"step_downs"`

	// Crashes, restarts and partitions that happened, and those the
	// schedule had to skip (the cluster never settled before the next).
	Crashes           int           `json:"crashes"`
	CrashesSkipped    int           `json:"crashes_skipped"`
	Restarts          int           `json:"restarts"`
	Partitions        int           `json:"partitions"`
	PartitionsSkipped int           `json:"partitions_skipped"`
	CrashList         []CrashRecord `json:"crash_list"`
	// Promotions counts backups promoted; PromotionsWithoutCrash those of
	// objects no crash had left without a primary (a partition, lost
	// packets or a restart taken for a death), PromotionsOfLiveNodes
	// those whose old primary's node was up (its primary steps down when
	// it learns of the new epoch).
	Promotions             int `json:"promotions"`
	PromotionsWithoutCrash int `json:"promotions_without_crash"`
	PromotionsOfLiveNodes  int `json:"promotions_of_live_nodes"`
	// ObjectsStalled counts objects without a primary on a live node for
	// longer than the budget with no crash involved (a migration held up
	// by a partition); ObjectsResurrected objects a node held as a
	// primary again after the game deleted them (a backup promoted
	// before it heard of the deletion).
	ObjectsStalled     int `json:"objects_stalled"`
	ObjectsResurrected int `json:"objects_resurrected"`

	// Writes by ID made, refused by the writer, acknowledged and given up.
	Writes          int `json:"writes"`
	WritesRefused   int `json:"writes_refused"`
	WritesAcked     int `json:"writes_acked"`
	WritesAbandoned int `json:"writes_abandoned"`

	// Failover latency: a crash to the promotion of each of its objects
	// (a new primary that accepts writes), over every object of every
	// crash.
	Failovers     int     `json:"failovers"`
	FailoverP50Ms float64 `json:"failover_p50_ms"`
	FailoverP99Ms float64 `json:"failover_p99_ms"`
	FailoverMaxMs float64 `json:"failover_max_ms"`
	// Migration pause: the old node handing an object over to the new one
	// installing it (writes to it wait that long), and the share of
	// handoffs that paused at most a frame (100 ms) plus the round trip
	// between the two nodes.
	MigrationPauseP50Ms  float64 `json:"migration_pause_p50_ms"`
	MigrationPauseP99Ms  float64 `json:"migration_pause_p99_ms"`
	MigrationPauseMaxMs  float64 `json:"migration_pause_max_ms"`
	PausesWithinFrameRTT float64 `json:"pauses_within_frame_rtt"`

	// MissingReplicas is the harness's missing replicas (share of the
	// objects in the players' interest a node lacked), per grace period.
	MissingReplicas []Missing `json:"missing_replicas"`
	// Bandwidth is the mean per-player-node bandwidth (B/s, in + out,
	// IPv4/UDP headers included), with its split by traffic class.
	Bandwidth Bandwidth `json:"bandwidth_per_node"`

	failovers []FailoverRecord
	pauses    []MigrationRecord
}

// Settings are the run's configuration, as faults.json records it.
type Settings struct {
	Arch           string  `json:"arch"`
	Nodes          int     `json:"nodes"`
	PlayersPerNode int     `json:"players_per_node"`
	Map            string  `json:"map"`
	Slice          int     `json:"planetlab_slice"`
	DurationS      float64 `json:"duration_s"`
	Migrations     int     `json:"migrations"`
	Crashes        int     `json:"crashes"`
	RestartAfterMs float64 `json:"restart_after_ms"`
	Partitions     int     `json:"partitions"`
	Loss           float64 `json:"loss"`
	Dup            float64 `json:"dup"`
	JitterMs       float64 `json:"jitter_ms"`
	Reorder        float64 `json:"reorder,omitempty"`
	WriteRate      float64 `json:"write_rate"`
	BudgetMs       float64 `json:"failover_budget_ms"`
	Failover       bool    `json:"failover"`
}

// CrashRecord is one crash: the node, when, how many primaries it held
// and how many of them no live node had a copy of.
type CrashRecord struct {
	Node        wire.NodeID `json:"node"`
	AtMs        float64     `json:"at_ms"`
	Primaries   int         `json:"primaries"`
	Unprotected int         `json:"unprotected"`
}

// FailoverRecord is one object failed over after a crash.
type FailoverRecord struct {
	ID        uint64
	Dead, By  wire.NodeID
	CrashMs   float64
	LatencyMs float64
}

// MigrationRecord is one handoff: the old node, the new, when, the pause
// and the round trip between the two nodes.
type MigrationRecord struct {
	ID             uint64
	From, To       wire.NodeID
	AtMs           float64
	PauseMs        float64
	RTTMs          float64
	WithinFrameRTT bool
}

// Missing is the missing-replica share at one grace period.
type Missing struct {
	GraceMs  float64 `json:"grace_ms"`
	Fraction float64 `json:"fraction"`
}

// Bandwidth is a per-node bandwidth (B/s).
type Bandwidth struct {
	In      float64            `json:"in"`
	Out     float64            `json:"out"`
	Total   float64            `json:"total"`
	P95     float64            `json:"p95_total"`
	ByClass map[string]float64 `json:"by_class"`
}

func newReport(c Config) *Report {
	return &Report{Schema: Schema, Seed: c.Seed, Violations: []string{}, CrashList: []CrashRecord{},
		Settings: Settings{Arch: string(c.Arch), Nodes: c.Nodes, PlayersPerNode: c.PlayersPerNode, Map: c.Map.String(),
			Slice: c.Slice, DurationS: c.Duration.Seconds(), Migrations: c.Migrations, Crashes: c.Crashes,
			RestartAfterMs: msOf(c.RestartAfter), Partitions: c.Partitions, Loss: c.Loss, Dup: c.Duplicate,
			JitterMs: msOf(c.Jitter), Reorder: c.Reorder, WriteRate: c.WriteRate, BudgetMs: msOf(c.FailoverBudget), Failover: !c.NoFailover}}
}

// round3 keeps three decimals: the figures are milliseconds and shares.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// fill computes the latency figures and copies the harness's measures.
func (r *Report) fill(res *harness.Result) {
	fl := make([]float64, len(r.failovers))
	for i, f := range r.failovers {
		fl[i] = f.LatencyMs
	}
	r.Failovers = len(fl)
	r.FailoverP50Ms, r.FailoverP99Ms, r.FailoverMaxMs = round3(report.Quantile(fl, 0.5)), round3(report.Quantile(fl, 0.99)), round3(report.Quantile(fl, 1))
	pl := make([]float64, len(r.pauses))
	within := 0
	for i, p := range r.pauses {
		pl[i] = p.PauseMs
		if p.WithinFrameRTT {
			within++
		}
	}
	r.MigrationPauseP50Ms, r.MigrationPauseP99Ms, r.MigrationPauseMaxMs = round3(report.Quantile(pl, 0.5)), round3(report.Quantile(pl, 0.99)), round3(report.Quantile(pl, 1))
	if len(pl) > 0 {
		r.PausesWithinFrameRTT = round3(float64(within) / float64(len(pl)))
	}
	for _, m := range res.Summary.Views.Missing {
		r.MissingReplicas = append(r.MissingReplicas, Missing{GraceMs: m.GraceMs, Fraction: m.Fraction})
	}
	p := res.Players
	r.Bandwidth = Bandwidth{In: round3(p.Mean.In), Out: round3(p.Mean.Out), Total: round3(p.Mean.Total), P95: round3(p.P95.Total),
		ByClass: map[string]float64{}}
	for _, c := range p.ByClass {
		r.Bandwidth.ByClass[c.Class] = round3(c.Rate.Total)
	}
}

// Failed names the invariants that failed, with their counts (empty when
// all hold).
func (r *Report) Failed() []string {
	var out []string
	for _, c := range []struct {
		name string
		n    int
	}{{"objects_lost", r.ObjectsLost}, {"acked_writes_lost", r.AckedWritesLost}, {"writes_applied_twice", r.WritesAppliedTwice},
		{"duplicate_primaries", r.DuplicatePrimaries}} {
		if c.n != 0 {
			out = append(out, fmt.Sprintf("%s = %d", c.name, c.n))
		}
	}
	return out
}

// FailoverList returns every object failed over after a crash, in the
// order of the run.
func (r *Report) FailoverList() []FailoverRecord { return slices.Clone(r.failovers) }

// HandoffList returns every installed handoff, in the order of the run.
func (r *Report) HandoffList() []MigrationRecord { return slices.Clone(r.pauses) }

// WriteJSON writes the report as faults.json does: indented, fields in a
// fixed order.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes the headline figures as a text table.
func (r *Report) WriteTable(w io.Writer) error {
	s := r.Settings
	check := func(n int) string {
		if n == 0 {
			return "0 ✓"
		}
		return strconv.Itoa(n) + " ✗"
	}
	missing := ""
	for i, m := range r.MissingReplicas {
		if i > 0 {
			missing += " / "
		}
		missing += report.Pct(m.Fraction)
	}
	rows := [][]string{
		{"setting", "value"},
		{"world", fmt.Sprintf("%s, %d nodes × %d bots, %s map, %.0f s, seed %d, failover %v", s.Arch, s.Nodes, s.PlayersPerNode, s.Map, s.DurationS, r.Seed, s.Failover)},
		{"network", networkLine(s)},
		{"schedule", fmt.Sprintf("%d migrations (%d refused, %d aborted; %d handoffs), %d crashes (%d skipped), %d restarts, %d partitions, %d writes (%d acknowledged)",
			r.Migrations, r.MigrationsRefused, r.MigrationsAborted, r.Handoffs, r.Crashes, r.CrashesSkipped, r.Restarts, r.Partitions, r.Writes, r.WritesAcked)},
		{"objects_lost", check(r.ObjectsLost)},
		{"acked_writes_lost", check(r.AckedWritesLost)},
		{"writes_applied_twice", check(r.WritesAppliedTwice)},
		{"duplicate_primaries", check(r.DuplicatePrimaries)},
		{"failover p50 / p99 / max", fmt.Sprintf("%.0f / %.0f / %.0f ms (%d objects)", r.FailoverP50Ms, r.FailoverP99Ms, r.FailoverMaxMs, r.Failovers)},
		{"migration pause p50 / p99 / max", fmt.Sprintf("%.0f / %.0f / %.0f ms; %s within 100 ms + RTT", r.MigrationPauseP50Ms, r.MigrationPauseP99Ms, r.MigrationPauseMaxMs, report.Pct(r.PausesWithinFrameRTT))},
		{"missing replicas (0/100/400 ms)", missing},
		{"bandwidth per node (in + out)", fmt.Sprintf("%.0f B/s (p95 %.0f)", r.Bandwidth.Total, r.Bandwidth.P95)},
	}
	_, err := io.WriteString(w, report.AlignTable(rows, 1))
	return err
}

// WriteCSV writes faults.json and, as CSV, every handoff's pause beside
// its bound (faults-migrations.csv) and every object's failover
// (faults-failovers.csv) into dir (created if missing), and returns their
// paths.
func (r *Report) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/faults: %w", err)
	}
	path := filepath.Join(dir, "faults.json")
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("lab/faults: %w", err)
	}
	err = r.WriteJSON(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("lab/faults: %s: %w", path, err)
	}
	files := []string{path}
	rows := [][]string{{"object", "from", "to", "at_ms", "pause_ms", "rtt_ms", "bound_ms", "within_bound"}}
	for _, p := range r.pauses {
		rows = append(rows, []string{world.ObjectID(p.ID).String(), strconv.Itoa(int(p.From)), strconv.Itoa(int(p.To)), report.Float(p.AtMs),
			report.Float(p.PauseMs), report.Float(p.RTTMs), report.Float(p.RTTMs + 100), strconv.FormatBool(p.WithinFrameRTT)})
	}
	path = filepath.Join(dir, "faults-migrations.csv")
	if err := report.WriteCSV(path, rows); err != nil {
		return files, err
	}
	files = append(files, path)
	rows = [][]string{{"object", "dead_node", "promoted_on", "crash_ms", "latency_ms"}}
	for _, f := range r.failovers {
		rows = append(rows, []string{world.ObjectID(f.ID).String(), strconv.Itoa(int(f.Dead)), strconv.Itoa(int(f.By)),
			report.Float(f.CrashMs), report.Float(f.LatencyMs)})
	}
	path = filepath.Join(dir, "faults-failovers.csv")
	if err := report.WriteCSV(path, rows); err != nil {
		return files, err
	}
	return append(files, path), nil
}

// WritePlots draws the failover latency and migration pause CDFs into
// faults-cdf.png in dir and returns its path.
func (r *Report) WritePlots(dir string) ([]string, error) {
	fp := report.NewPlot("Failover: crash → new primary", "ms", "share of objects")
	var fl []float64
	for _, f := range r.failovers {
		fl = append(fl, f.LatencyMs)
	}
	report.AddCDF(fp, fl, report.Red, fmt.Sprintf("%d objects, p50 %.0f ms, p99 %.0f ms", len(fl), r.FailoverP50Ms, r.FailoverP99Ms))
	fp.Add(report.VLine{X: r.Settings.BudgetMs})
	mp := report.NewPlot("Migration pause: handed over → installed", "ms", "share of handoffs")
	var pl, excess []float64
	for _, p := range r.pauses {
		pl = append(pl, p.PauseMs)
		excess = append(excess, p.PauseMs-p.RTTMs)
	}
	report.AddCDF(mp, pl, report.Blue, fmt.Sprintf("pause: p50 %.0f ms, p99 %.0f ms", r.MigrationPauseP50Ms, r.MigrationPauseP99Ms))
	report.AddCDF(mp, excess, report.Orange, "pause − RTT (bound: 100 ms)")
	mp.Add(report.VLine{X: 100})
	for _, p := range []*plot.Plot{fp, mp} {
		p.Y.Min, p.Y.Max = 0, 1.35
	}
	path := filepath.Join(dir, "faults-cdf.png")
	if err := report.SavePNG(path, 10*vg.Inch, 4*vg.Inch, fp, mp); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// networkLine describes a run's network for the table.
func networkLine(s Settings) string {
	line := fmt.Sprintf("loss %s, duplication %s, jitter %.0f ms", report.Pct(s.Loss), report.Pct(s.Dup), s.JitterMs)
	if s.Reorder > 0 {
		line += ", reordering " + report.Pct(s.Reorder)
	}
	return line
}

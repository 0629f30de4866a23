package sim

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/overworld/overworld/wire"
)

// SummarySchema names the layout of Summary's JSON; it changes when a field
// changes meaning or is removed (adding fields keeps it).
const SummarySchema = "overworld-sim/1"

// Summary is a run's metrics as one deterministic document: the same seed
// and inputs give a byte-identical JSON file. Rates are per second of
// virtual time; bandwidth is in bytes per second (B/s) including the
// configured header overhead. Labels are the integrator's (architecture,
// players per node, map, ...), so the lab can group summaries, e.g. plot
// per-node bandwidth against node count per architecture.
type Summary struct {
	Schema    string            `json:"schema"`
	Labels    map[string]string `json:"labels"`
	Seed      uint64            `json:"seed"`
	DurationS float64           `json:"duration_s"`
	Config    ConfigSummary     `json:"config"`
	Sites     SitesSummary      `json:"sites"`
	Nodes     NodesSummary      `json:"nodes"`
	Traffic   TrafficSummary    `json:"traffic"`
	// Bandwidth aggregates the per-node bandwidth over all nodes ever added.
	Bandwidth BandwidthSummary `json:"bandwidth"`
	Views     Views            `json:"views"`
	Staleness Dist             `json:"staleness_ms"`
	FrameTime Dist             `json:"frame_time_ms"`
	Counters  map[string]int64 `json:"counters"`
	PerNode   []NodeSummary    `json:"per_node"`
}

// ConfigSummary is the network configuration of a run.
type ConfigSummary struct {
	FramePeriodMs float64   `json:"frame_period_ms"`
	SameSiteMs    float64   `json:"same_site_ms"`
	HeaderBytes   int       `json:"header_bytes"`
	JitterMeanMs  float64   `json:"jitter_mean_ms"`
	Loss          float64   `json:"loss"`
	Duplicate     float64   `json:"duplicate"`
	Reorder       float64   `json:"reorder,omitempty"`
	ReorderMaxMs  float64   `json:"reorder_max_ms,omitempty"`
	GraceMs       []float64 `json:"grace_ms"`
	WarmupMs      float64   `json:"warmup_ms,omitempty"`
}

// SitesSummary describes the latency table: how many sites and how many
// ordered pairs were measured or filled in (see geo.SiteFill).
type SitesSummary struct {
	Count         int `json:"count"`
	Measured      int `json:"measured"`
	FilledReverse int `json:"filled_reverse"`
	FilledDetour  int `json:"filled_detour"`
}

// NodesSummary counts nodes by state at the end of the run, and the
// restarts of crashed nodes (Sim.Restart) during it.
type NodesSummary struct {
	Added    int `json:"added"`
	Up       int `json:"up"`
	Crashed  int `json:"crashed"`
	Left     int `json:"left"`
	Restarts int `json:"restarts,omitempty"`
}

// ClassCounts is the traffic of one class.
type ClassCounts struct {
	Class string `json:"class"`
	Counts
}

// TrafficSummary is the network-wide traffic (see Totals).
type TrafficSummary struct {
	Sent          Counts            `json:"sent"`
	ByClass       []ClassCounts     `json:"by_class"`
	Delivered     Counts            `json:"delivered"`
	Duplicated    Counts            `json:"duplicated"`
	Dropped       map[string]Counts `json:"dropped"`
	InFlight      Counts            `json:"in_flight"`
	Rejected      Counts            `json:"rejected"`
	FirstRejected string            `json:"first_rejected,omitempty"`
}

// Rate is a bandwidth in B/s: received, sent, and their sum.
type Rate struct {
	In    float64 `json:"in"`
	Out   float64 `json:"out"`
	Total float64 `json:"total"`
}

// BandwidthSummary aggregates per-node bandwidth. Mean is each node's bytes
// over its time up, averaged over nodes; P95 is each node's 95th percentile
// of 1 s bursts, averaged over nodes; Max* are the largest node's values.
// ByClass splits the mean by traffic class.
type BandwidthSummary struct {
	Mean        Rate        `json:"mean_Bps"`
	MaxMean     Rate        `json:"max_mean_Bps"`
	P95         Rate        `json:"p95_Bps"`
	MaxP95      Rate        `json:"max_p95_Bps"`
	ByClass     []ClassRate `json:"by_class_mean_Bps"`
	UpdatesPerS float64     `json:"update_msgs_per_s"` // update-class messages sent per node per second, mean over nodes
}

// ClassRate is the mean per-node bandwidth of one class.
type ClassRate struct {
	Class string `json:"class"`
	Rate
}

// NodeSummary is one node's measures. Its bandwidth is over its time up
// (UpS: the sum over its incarnations, if it restarted): Mean is bytes /
// seconds up; P95 is the 95th percentile (nearest rank) of the bytes in
// each whole second of virtual time the node was up (of the partial
// seconds if it was up for none). State is its state at the end, AddedS
// when it was first added, Restarts how many times it restarted.
type NodeSummary struct {
	ID          wire.NodeID       `json:"id"`
	Site        string            `json:"site"`
	State       string            `json:"state"`
	Restarts    int               `json:"restarts,omitempty"`
	AddedS      float64           `json:"added_s"`
	UpS         float64           `json:"up_s"`
	Frames      uint64            `json:"frames"`
	FrameRateHz float64           `json:"frame_rate_hz"`
	In          Counts            `json:"in"`
	Out         Counts            `json:"out"`
	InByClass   map[string]Counts `json:"in_by_class"`
	OutByClass  map[string]Counts `json:"out_by_class"`
	Mean        Rate              `json:"mean_Bps"`
	P95         Rate              `json:"p95_Bps"`
	UpdatesPerS float64           `json:"update_msgs_per_s"`
	FrameTimeMs *FrameTime        `json:"frame_time_ms,omitempty"`
	Reports     uint64            `json:"view_reports"`
	Missing     []Missing         `json:"missing"`
	Discovered  uint64            `json:"discovered"`
}

// FrameTime is a node's frame compute time, from Recorder.FrameTime.
type FrameTime struct {
	Frames int64   `json:"frames"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// Summary returns the run's metrics so far.
func (s *Sim) Summary() *Summary {
	cfg := s.cfg
	sum := &Summary{
		Schema:    SummarySchema,
		Labels:    map[string]string{},
		Seed:      cfg.Seed,
		DurationS: float64(s.now) / 1e9,
		Config: ConfigSummary{FramePeriodMs: ms(cfg.FramePeriod), SameSiteMs: ms(cfg.SameSite),
			HeaderBytes: cfg.HeaderBytes, JitterMeanMs: ms(cfg.Jitter), Loss: cfg.Loss, Duplicate: cfg.Duplicate,
			Reorder: cfg.Reorder, ReorderMaxMs: reorderMs(cfg)},
		Sites: SitesSummary{Count: s.sites.Len(), Measured: s.sites.Fill().Measured,
			FilledReverse: s.sites.Fill().Reverse, FilledDetour: s.sites.Fill().Detour},
		Views:     s.rec.Views(),
		Staleness: NewDist(s.rec.staleness),
		FrameTime: NewDist(s.rec.frameTime),
		Counters:  map[string]int64{},
		PerNode:   []NodeSummary{},
	}
	for _, g := range cfg.Grace {
		sum.Config.GraceMs = append(sum.Config.GraceMs, ms(g))
	}
	sum.Config.WarmupMs = ms(cfg.Warmup)
	for k, v := range s.rec.counters {
		sum.Counters[k] = v
	}
	t := s.Totals()
	sum.Traffic = TrafficSummary{Sent: t.Sent, Delivered: t.Delivered, Duplicated: t.Duplicated,
		Dropped: map[string]Counts{}, InFlight: t.InFlight, Rejected: t.Rejected, FirstRejected: t.FirstRejected}
	for c := range wire.NumClasses {
		sum.Traffic.ByClass = append(sum.Traffic.ByClass, ClassCounts{Class: wire.Class(c).String(), Counts: t.ByClass[c]})
	}
	for c := range NumDropCauses {
		sum.Traffic.Dropped[DropCause(c).String()] = t.Dropped[c]
	}

	var classIn, classOut [wire.NumClasses]float64
	bw := &sum.Bandwidth
	for i := range s.nodes {
		ns := s.nodeSummary(i, &classIn, &classOut)
		sum.PerNode = append(sum.PerNode, ns)
		sum.Nodes.Restarts += ns.Restarts
		switch s.nodes[i].state {
		case nodeUp:
			sum.Nodes.Up++
		case nodeCrashed:
			sum.Nodes.Crashed++
		case nodeLeft:
			sum.Nodes.Left++
		}
		bw.Mean = bw.Mean.plus(ns.Mean)
		bw.P95 = bw.P95.plus(ns.P95)
		bw.MaxMean = bw.MaxMean.max(ns.Mean)
		bw.MaxP95 = bw.MaxP95.max(ns.P95)
		bw.UpdatesPerS += ns.UpdatesPerS
	}
	n := len(s.nodes)
	sum.Nodes.Added = n
	if n > 0 {
		f := 1 / float64(n)
		bw.Mean, bw.P95, bw.UpdatesPerS = bw.Mean.scale(f), bw.P95.scale(f), bw.UpdatesPerS*f
		for c := range classIn {
			classIn[c] *= f
			classOut[c] *= f
		}
	}
	for c := range wire.NumClasses {
		bw.ByClass = append(bw.ByClass, ClassRate{Class: wire.Class(c).String(),
			Rate: Rate{In: classIn[c], Out: classOut[c], Total: classIn[c] + classOut[c]}})
	}
	return sum
}

func (r Rate) plus(o Rate) Rate { return Rate{r.In + o.In, r.Out + o.Out, r.Total + o.Total} }
func (r Rate) scale(f float64) Rate {
	return Rate{r.In * f, r.Out * f, r.Total * f}
}
func (r Rate) max(o Rate) Rate {
	return Rate{max(r.In, o.In), max(r.Out, o.Out), max(r.Total, o.Total)}
}

// upSpans returns node i's time up: when each of its incarnations came up
// and went down (the latest's: now if up), in order.
func (s *Sim) upSpans(i int) []span {
	n := &s.nodes[i]
	to := s.now
	if n.state != nodeUp {
		to = n.down
	}
	return append(n.past[:len(n.past):len(n.past)], span{n.since, to})
}

func (s *Sim) nodeSummary(i int, classIn, classOut *[wire.NumClasses]float64) NodeSummary {
	n := &s.nodes[i]
	spans := s.upSpans(i)
	var upNs int64
	for _, sp := range spans {
		upNs += sp.to - sp.from
	}
	up := float64(upNs) / 1e9
	ns := NodeSummary{
		ID: n.id, Site: s.sites.Name(int(n.site)), State: n.state.String(), Restarts: int(n.gen),
		AddedS: float64(n.added) / 1e9, UpS: up, Frames: n.ticks,
		In: sum(n.in), Out: sum(n.out),
		InByClass: map[string]Counts{}, OutByClass: map[string]Counts{},
	}
	for c := range wire.NumClasses {
		name := wire.Class(c).String()
		ns.InByClass[name], ns.OutByClass[name] = n.in[c], n.out[c]
	}
	if up > 0 {
		ns.FrameRateHz = float64(n.ticks) / up
		ns.Mean = Rate{In: float64(ns.In.Bytes) / up, Out: float64(ns.Out.Bytes) / up}
		ns.Mean.Total = ns.Mean.In + ns.Mean.Out
		ns.UpdatesPerS = float64(n.out[wire.ClassUpdate].Msgs) / up
		for c := range wire.NumClasses {
			classIn[c] += float64(n.in[c].Bytes) / up
			classOut[c] += float64(n.out[c].Bytes) / up
		}
	}
	ns.P95 = s.burstP95(i, spans)
	if ft, ok := s.rec.frameByNode[n.id]; ok {
		ns.FrameTimeMs = &FrameTime{Frames: ft.n, Mean: ms(ft.sum) / float64(ft.n), Max: ms(ft.max)}
	}
	if v := s.rec.views[n.id]; v != nil {
		ns.Reports, ns.Discovered = v.frames, v.discovered
		ns.Missing = s.rec.missingOf(v.frames, v.total, &v.missing, nil, 0)
	} else {
		ns.Missing = s.rec.missingOf(0, 0, &[maxGrace]uint64{}, nil, 0)
	}
	return ns
}

// burstP95 returns the 95th percentile of node i's per-second bytes over the
// whole seconds of its spans up, or over the partial ones if there are none
// (a second two spans touch counts once).
func (s *Sim) burstP95(i int, spans []span) Rate {
	n := &s.nodes[i]
	secs := upSeconds(spans, true)
	if len(secs) == 0 {
		secs = upSeconds(spans, false)
	}
	if len(secs) == 0 {
		return Rate{}
	}
	at := func(series []uint32, k int64) float64 {
		if j := k - n.firstSec; j >= 0 && j < int64(len(series)) {
			return float64(series[j])
		}
		return 0
	}
	atIn := func(k int64) float64 { return float64(n.inBytes(k - n.firstSec)) }
	in := make([]float64, 0, len(secs))
	out := make([]float64, 0, len(secs))
	tot := make([]float64, 0, len(secs))
	for _, k := range secs {
		a, b := atIn(k), at(n.secOut, k)
		in, out, tot = append(in, a), append(out, b), append(tot, a+b)
	}
	slices.Sort(in)
	slices.Sort(out)
	slices.Sort(tot)
	return Rate{In: rank(in, 0.95), Out: rank(out, 0.95), Total: rank(tot, 0.95)}
}

// upSeconds returns the seconds of virtual time that spans (in order)
// cover: wholly if whole, else in part; each once, ascending.
func upSeconds(spans []span, whole bool) []int64 {
	sec := int64(time.Second)
	var secs []int64
	for _, sp := range spans {
		lo, hi := sp.from/sec, (sp.to+sec-1)/sec
		if whole {
			lo, hi = (sp.from+sec-1)/sec, sp.to/sec
		}
		for k := lo; k < hi; k++ {
			if len(secs) == 0 || k > secs[len(secs)-1] {
				secs = append(secs, k)
			}
		}
	}
	return secs
}

// WriteJSON writes the summary as indented JSON (map keys sorted, floats in
// Go's shortest round-trip form), ending with a newline.
func (sum *Summary) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("sim: summary: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSummary reads a summary written by WriteJSON, for the lab to compare
// runs. It rejects malformed JSON, trailing data and a schema other than
// SummarySchema; fields it does not know are ignored.
func ReadSummary(r io.Reader) (*Summary, error) {
	dec := json.NewDecoder(r)
	var sum Summary
	if err := dec.Decode(&sum); err != nil {
		return nil, fmt.Errorf("sim: summary: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("sim: summary: trailing data after the JSON object")
	}
	if sum.Schema != SummarySchema {
		return nil, fmt.Errorf("sim: summary: schema %q, want %q", sum.Schema, SummarySchema)
	}
	return &sum, nil
}

func f64(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
func u64(x uint64) string  { return strconv.FormatUint(x, 10) }

// WriteSeriesCSV writes the whole network's time series, one row per second
// of virtual time from 0 to Now (rounded up): messages and bytes sent (and
// bytes sent by class), received, duplicated and dropped (messages, by
// cause), then the view reports of that second, the interesting (report,
// object) pairs, the fraction missing for every grace period (ratio of
// sums; empty when there were no reports) and the discoveries.
func (s *Sim) WriteSeriesCSV(w io.Writer) error {
	head := []string{"second", "sent_msgs", "sent_bytes"}
	for c := range wire.NumClasses {
		head = append(head, "sent_bytes_"+wire.Class(c).String())
	}
	head = append(head, "delivered_msgs", "delivered_bytes", "duplicated_msgs")
	for c := range NumDropCauses {
		head = append(head, "dropped_"+DropCause(c).String())
	}
	head = append(head, "view_reports", "interesting")
	for _, g := range s.cfg.Grace {
		head = append(head, "missing_"+f64(ms(g))+"ms")
	}
	head = append(head, "discoveries")
	cw := csv.NewWriter(w)
	if err := cw.Write(head); err != nil {
		return err
	}
	secs := int((s.now + int64(time.Second) - 1) / int64(time.Second))
	secs = max(secs, len(s.tr.secs), len(s.rec.secs))
	row := make([]string, 0, len(head))
	for k := range secs {
		var tr secRow
		if k < len(s.tr.secs) {
			tr = s.tr.secs[k]
		}
		var vs viewSec
		if k < len(s.rec.secs) {
			vs = s.rec.secs[k]
		}
		sent := sum(tr.out)
		row = append(row[:0], strconv.Itoa(k), u64(sent.Msgs), u64(sent.Bytes))
		for c := range wire.NumClasses {
			row = append(row, u64(tr.out[c].Bytes))
		}
		row = append(row, u64(tr.in.Msgs), u64(tr.in.Bytes), u64(tr.dup.Msgs))
		for c := range NumDropCauses {
			row = append(row, u64(tr.drop[c].Msgs))
		}
		row = append(row, u64(vs.frames), u64(vs.total))
		for g := range s.cfg.Grace {
			if vs.total > 0 {
				row = append(row, f64(float64(vs.missing[g])/float64(vs.total)))
			} else {
				row = append(row, "")
			}
		}
		row = append(row, u64(vs.discoveries))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteNodeSeriesCSV writes every node's bytes received and sent in each
// second of virtual time it was up, in any of its incarnations (second,
// node, bytes_in, bytes_out), in
// the order nodes were added: the 1 s bursts behind the p95 bandwidth.
func (s *Sim) WriteNodeSeriesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"second", "node", "bytes_in", "bytes_out"}); err != nil {
		return err
	}
	row := make([]string, 4)
	for i := range s.nodes {
		n := &s.nodes[i]
		for _, k := range upSeconds(s.upSpans(i), false) {
			a, b := n.inBytes(k-n.firstSec), uint32(0)
			if j := k - n.firstSec; j < int64(len(n.secOut)) {
				b = n.secOut[j]
			}
			row[0], row[1] = strconv.FormatInt(k, 10), strconv.FormatUint(uint64(n.id), 10)
			row[2], row[3] = u64(uint64(a)), u64(uint64(b))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// reorderMs is the bound of the reordering delay in ms, 0 without
// reordering (so that summaries of runs without it keep their bytes).
func reorderMs(cfg Config) float64 {
	if cfg.Reorder == 0 {
		return 0
	}
	return ms(cfg.ReorderDelay)
}

package localcluster

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/overworld/overworld/wire"
)

// HeaderBytes is added to every packet's payload in the bandwidth figures:
// an IPv4 header (20) plus a UDP header (8), as the simulator counts.
const HeaderBytes = 28

// ParseMetrics reads the samples of the Prometheus text format (without
// timestamps) into "name{labels}" → value. A line that is not a sample
// or a comment is an error.
func ParseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		k := strings.LastIndexByte(line, ' ')
		if k < 0 {
			return nil, fmt.Errorf("localcluster: metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[k+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("localcluster: metrics: bad value in %q", line)
		}
		m[line[:k]] = v
	}
	return m, sc.Err()
}

// Figures are one node's live figures over a run, from its metrics.
type Figures struct {
	// In and Out are bytes/s by traffic class, with HeaderBytes per
	// packet.
	In, Out             [wire.NumClasses]float64
	Primaries, Replicas float64 // objects at the scrape
	Frames, CPU         float64 // frames run, process CPU seconds
	CPUPerFrame         float64 // CPU seconds per frame in the steady state (Observe)
	FrameSum, FrameN    float64 // frame time histogram: sum (s) and count
	StaleSum, StaleN    float64 // replica staleness histogram: sum (s) and count
	Updates             float64 // object updates sent
	Drops, Malformed    float64 // queue and inbox drops; malformed packets
	Players             float64 // players in game at the scrape
	Elapsed             float64 // seconds from the epoch to the scrape (the rates' span)
	PlayerStates        float64 // State messages written to players
	PlayerBytes         float64 // their bytes per second
}

// FiguresOf reads a node's Figures from its metrics, elapsed seconds
// after the cluster's epoch (CPUPerFrame is left 0).
func FiguresOf(m map[string]float64, elapsed float64) Figures {
	f := Figures{Elapsed: elapsed}
	for c := range wire.NumClasses {
		name := wire.Class(c).String()
		f.In[c] = (m[`overworld_bytes_total{class="`+name+`",dir="in"}`] + HeaderBytes*m[`overworld_messages_total{class="`+name+`",dir="in"}`]) / elapsed
		f.Out[c] = (m[`overworld_bytes_total{class="`+name+`",dir="out"}`] + HeaderBytes*m[`overworld_messages_total{class="`+name+`",dir="out"}`]) / elapsed
	}
	f.Primaries, f.Replicas = m[`overworld_objects{role="primary"}`], m[`overworld_objects{role="replica"}`]
	f.Frames, f.CPU = m["overworld_frames_total"], m["process_cpu_seconds_total"]
	f.FrameSum, f.FrameN = m["overworld_frame_seconds_sum"], m["overworld_frame_seconds_count"]
	f.StaleSum, f.StaleN = m["overworld_replica_staleness_seconds_sum"], m["overworld_replica_staleness_seconds_count"]
	f.Updates = m["overworld_updates_sent_total"]
	f.Drops = m["overworld_queue_drops_total"] + m["overworld_inbox_drops_total"]
	f.Malformed = m[`overworld_malformed_total{stage="transport"}`] + m[`overworld_malformed_total{stage="core"}`]
	f.Players = m["overworld_players"]
	f.PlayerStates = m["overworld_player_states_total"]
	f.PlayerBytes = m["overworld_player_state_bytes_total"] / elapsed
	return f
}

// Total returns the node's bandwidth, in and out, over every class
// (bytes/s).
func (f Figures) Total() float64 {
	var t float64
	for c := range wire.NumClasses {
		t += f.In[c] + f.Out[c]
	}
	return t
}

package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/overworld/overworld/arena"
)

// fortnite writes arena/data/fortnite.bin.gz from
// fortnite-movement/Data/Traces: for every game of game_overview.csv not
// marked won = -1 (extraction errors, which the data's README says to
// ignore), the samples of phases 1 and 2 (on foot; 0 is the bus, -1 the
// glide), with their time from video_time, in the format of
// arena.AppendFortnite. It copies the licence and checks that the embedded
// decoder reproduces what it read.
func (g *gen) fortnite() error {
	dir := filepath.Join(g.src, "fortnite-movement", "Data", "Traces")
	f, err := os.Open(filepath.Join(dir, "game_overview.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("game_overview.csv: %w", err)
	}
	// game_overview.csv names some files in another letter case.
	ents, err := os.ReadDir(filepath.Join(dir, "movement_traces"))
	if err != nil {
		return err
	}
	files := map[string]string{}
	for _, e := range ents {
		files[strings.ToLower(e.Name())] = e.Name()
	}
	var traces []arena.FortniteTrace
	games, skipped := 0, 0
	for i, r := range rows[1:] {
		if len(r) != 10 {
			return fmt.Errorf("game_overview.csv row %d: %d columns, want 10", i+2, len(r))
		}
		games++
		if strings.TrimSpace(r[4]) == "-1" {
			skipped++
			continue
		}
		name, ok := files[strings.ToLower(strings.TrimSpace(r[8]))]
		if !ok {
			return fmt.Errorf("game_overview.csv row %d: no trace file %q", i+2, r[8])
		}
		tr, err := readFortniteTrace(filepath.Join(dir, "movement_traces", name))
		if err != nil {
			return err
		}
		if len(tr) > 0 {
			traces = append(traces, tr)
		}
	}
	raw := arena.AppendFortnite(nil, traces)
	back, err := arena.DecodeFortnite(raw)
	if err != nil || !reflect.DeepEqual(back, traces) {
		return fmt.Errorf("fortnite: the decoder does not reproduce the traces (%v)", err)
	}
	samples := 0
	for _, t := range traces {
		samples += len(t)
	}
	log.Printf("fortnite: %d games, %d marked won=-1 skipped, %d traces with on-foot samples, %d samples, %d bytes raw",
		games, skipped, len(traces), samples, len(raw))
	if err := g.write("fortnite.bin.gz", gz(raw)); err != nil {
		return err
	}
	lic, err := os.ReadFile(filepath.Join(g.src, "fortnite-movement", "LICENSE-MIT.txt"))
	if err != nil {
		return err
	}
	return g.write("LICENSE-MIT.txt", lic)
}

// readFortniteTrace reads one movement trace and keeps its on-foot samples
// (phase 1 or 2), dropping repeated timestamps.
func readFortniteTrace(path string) (arena.FortniteTrace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.TrimLeadingSpace = true
	if _, err := cr.Read(); err != nil { // header
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var tr arena.FortniteTrace
	t0, last := -1, -1
	for line := 2; ; line++ {
		r, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(r) != 7 {
			return nil, fmt.Errorf("%s line %d: %d columns, want 7", path, line, len(r))
		}
		phase, e1 := strconv.Atoi(r[0])
		x, e2 := strconv.Atoi(r[1])
		y, e3 := strconv.Atoi(r[2])
		t, e4 := hms(r[4])
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
			return nil, fmt.Errorf("%s line %d: bad phase, position or time %q", path, line, r)
		}
		if x < 0 || x > arena.FortniteMapPixels || y < 0 || y > arena.FortniteMapPixels {
			return nil, fmt.Errorf("%s line %d: position (%d, %d) off the minimap", path, line, x, y)
		}
		if phase != 1 && phase != 2 {
			continue
		}
		if t0 < 0 {
			t0 = t
		}
		if t-t0 <= last {
			continue // repeated (or backwards) timestamp
		}
		last = t - t0
		tr = append(tr, arena.FortniteSample{T: int32(last), X: int16(x), Y: int16(y)})
	}
	return tr, nil
}

// hms parses hh:mm:ss into seconds.
func hms(s string) (int, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("time %q: want hh:mm:ss", s)
	}
	t := 0
	for _, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("time %q: want hh:mm:ss", s)
		}
		t = t*60 + v
	}
	return t, nil
}

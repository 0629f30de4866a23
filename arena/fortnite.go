package arena

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The Fortnite traces of Moll et al., "How Players Play your Games —
// Observing the Influences of Game Mechanics" (github.com/phylib/
// FortniteVideoAnalysis, MIT licence; see data/NOTICE.md): the recording
// player's minimap position once a second, from gameplay videos. The
// embedded file keeps, for each game not marked as badly extracted, the
// samples of the on-foot phases (1 and 2; phase 0 is the battle bus and -1
// the glide down). cmd/gendata derives it (-fortnite).
//
//go:embed data/fortnite.bin.gz
var fortniteGz []byte

// Fortnite map geometry. The minimap is 1500 × 1500 pixels and shows the
// 2018 island's 10 × 10 grid, each square 49 building tiles of 5.12 m, so
// the island is 2,509 m across and a pixel is 1.67 m.
const (
	FortniteMapPixels    = 1500
	FortniteMetresPerPix = 10 * 49 * 5.12 / FortniteMapPixels
	// FortniteRunSpeed is the base running speed, 5.5 m/s (Fortnite
	// wiki), against Quake III's 10 m/s (RunSpeed).
	FortniteRunSpeed = 5.5
)

// FortniteSample is one position of a trace: T seconds after the trace's
// first sample, at minimap pixel (X, Y).
type FortniteSample struct {
	T    int32
	X, Y int16
}

// FortniteTrace is one game's on-foot samples, in time order (gaps where
// the player was in the bus or gliding, or the video analysis failed).
type FortniteTrace []FortniteSample

var fortniteMagic = []byte("OWFN\x01")

// Limits of DecodeFortnite: they bound what a corrupt file can allocate.
const (
	maxFortniteTraces  = 10_000
	maxFortniteSamples = 2_000_000
)

// ErrFortnite reports a corrupt Fortnite trace file.
var ErrFortnite = errors.New("arena: corrupt Fortnite trace file")

// AppendFortnite appends the encoding of traces: the magic "OWFN\x01", the
// trace count, then per trace its sample count and, per sample, the uvarint
// time step (seconds; 0 for the first) and the zig-zag varint steps of X
// and Y (from 0 for the first). Samples must be in time order with
// positions in [0, FortniteMapPixels].
func AppendFortnite(b []byte, traces []FortniteTrace) []byte {
	b = append(b, fortniteMagic...)
	b = binary.AppendUvarint(b, uint64(len(traces)))
	for _, tr := range traces {
		b = binary.AppendUvarint(b, uint64(len(tr)))
		var pt int32
		var px, py int16
		for i, s := range tr {
			dt := s.T - pt
			if i == 0 {
				dt = 0
			}
			b = binary.AppendUvarint(b, uint64(dt))
			b = binary.AppendVarint(b, int64(s.X-px))
			b = binary.AppendVarint(b, int64(s.Y-py))
			pt, px, py = s.T, s.X, s.Y
		}
	}
	return b
}

// DecodeFortnite decodes what AppendFortnite wrote. It rejects, with an
// error wrapping ErrFortnite, a bad magic, counts beyond the limits (10,000
// traces, 2,000,000 samples), truncated or trailing bytes, a time going
// backwards or beyond 24 h, and positions outside the minimap.
func DecodeFortnite(p []byte) ([]FortniteTrace, error) {
	bad := func(format string, args ...any) ([]FortniteTrace, error) {
		return nil, fmt.Errorf("%w: %s", ErrFortnite, fmt.Sprintf(format, args...))
	}
	if !bytes.HasPrefix(p, fortniteMagic) {
		return bad("bad magic or version")
	}
	p = p[len(fortniteMagic):]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	sv := func() (int64, bool) {
		v, n := binary.Varint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	nt, ok := uv()
	if !ok || nt > maxFortniteTraces {
		return bad("trace count missing or above %d", maxFortniteTraces)
	}
	traces := make([]FortniteTrace, 0, nt)
	total := uint64(0)
	for i := range nt {
		ns, ok := uv()
		if !ok || ns > maxFortniteSamples-total || ns > uint64(len(p)) { // a sample takes at least 3 bytes
			return bad("trace %d: sample count missing or beyond the limit", i)
		}
		total += ns
		tr := make(FortniteTrace, ns)
		var t, x, y int64
		for k := range tr {
			dt, ok1 := uv()
			dx, ok2 := sv()
			dy, ok3 := sv()
			if !ok1 || !ok2 || !ok3 {
				return bad("trace %d sample %d truncated", i, k)
			}
			if k == 0 && dt != 0 {
				return bad("trace %d starts at time %d, want 0", i, dt)
			}
			if k > 0 && dt == 0 {
				return bad("trace %d sample %d: time does not advance", i, k)
			}
			if dt > 86400 || t+int64(dt) > 86400 {
				return bad("trace %d sample %d: time beyond 24 h", i, k)
			}
			if dx < -FortniteMapPixels || dx > FortniteMapPixels || dy < -FortniteMapPixels || dy > FortniteMapPixels {
				return bad("trace %d sample %d: step (%d, %d) off the minimap", i, k, dx, dy)
			}
			t, x, y = t+int64(dt), x+dx, y+dy
			if x < 0 || x > FortniteMapPixels || y < 0 || y > FortniteMapPixels {
				return bad("trace %d sample %d: position (%d, %d) off the %d-pixel minimap", i, k, x, y, FortniteMapPixels)
			}
			tr[k] = FortniteSample{T: int32(t), X: int16(x), Y: int16(y)}
		}
		traces = append(traces, tr)
	}
	if len(p) != 0 {
		return bad("%d trailing bytes", len(p))
	}
	return traces, nil
}

var fortnite struct {
	once   sync.Once
	traces []FortniteTrace
	err    error
}

// Fortnite returns the embedded traces (decoded once; callers must not
// modify them).
func Fortnite() ([]FortniteTrace, error) {
	fortnite.once.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(fortniteGz))
		if err != nil {
			fortnite.err = fmt.Errorf("%w: %w", ErrFortnite, err)
			return
		}
		raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err != nil {
			fortnite.err = fmt.Errorf("%w: %w", ErrFortnite, err)
			return
		}
		fortnite.traces, fortnite.err = DecodeFortnite(raw)
	})
	return fortnite.traces, fortnite.err
}

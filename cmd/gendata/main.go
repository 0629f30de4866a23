// Command gendata regenerates the real data sets embedded in package geo
// (geo/data/) from the raw data in the shared data directory. It is a
// developer tool: the product never runs it and never reads the raw data.
//
// Usage, from the repository root:
//
//	go run ./cmd/gendata -src ../shared/data -out geo/data
//	go run ./cmd/gendata -src ../shared/data -verify
//	go run ./cmd/gendata -src ../shared/data -fortnite -out arena/data
//
// The first command reads
//
//   - planetlab-490/PlanetLabData_1..18 (490×490 RTT in ms) and writes
//     planetlab/sliceNN.bin.gz with geo.EncodePlanetLab: the upper triangle
//     as grid codes (slice 1) or as deltas against slice 1 (slices 2..18),
//     byte-plane shuffled and gzipped (the format is defined, writer and
//     reader side by side, in geo/planetlab_pack.go);
//   - wondernetwork-2018/cities.csv and Data/<City>/<City>Ping.csv and writes
//     wondernetwork/cities.csv.gz (name, country, coordinates, population)
//     and wondernetwork/rtt.bin.gz (avg and min RTT per directed pair);
//   - geonames-cities-100k/cities100000.txt and writes
//     geonames/cities100000.txt.gz, the same 19-column format with only
//     name, asciiname, latitude, longitude, country code and population
//     kept;
//
// and copies the licence texts next to them. It decodes every file it
// writes (PlanetLab with geo.DecodePlanetLab, the others with decoders of
// its own) and fails unless the result reproduces the source exactly. The second command (-verify), run after the first, checks
// the loaders of package geo, which embed what the first wrote, against the
// source: bit-exact for every PlanetLab slice, every WonderNetwork pair and
// every GeoNames city.
//
// WonderNetwork coordinates: the distance column of the ping files is
// WonderNetwork's own great-circle distance between its servers. For each
// city the generator compares it with the distance computed from
// cities.csv; where the median disagreement exceeds 25 km (20 cities whose
// name cities.csv resolved to the wrong place, plus Westpoort, which
// cities.csv lacks) it re-derives the coordinates by least squares from the
// published distances to the cities that do agree.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/overworld/overworld/geo"
)

func main() {
	src := flag.String("src", "../shared/data", "directory holding planetlab-490, wondernetwork-2018, geonames-cities-100k and topology-zoo")
	out := flag.String("out", "geo/data", "output directory (geo/data of the repository)")
	verify := flag.Bool("verify", false, "check package geo's embedded data against the source instead of writing")
	fortnite := flag.Bool("fortnite", false, "write the Fortnite movement traces of package arena into -out (arena/data) instead")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gendata: ")
	g := &gen{src: *src, out: *out}
	var err error
	switch {
	case *fortnite:
		err = g.fortnite()
	case *verify:
		err = g.verify()
	default:
		err = g.generate()
	}
	if err != nil {
		log.Fatal(err)
	}
}

type gen struct {
	src, out string
	written  int64
}

func (g *gen) generate() error {
	for _, step := range []func() error{g.planetLab, g.wonder, g.geoNames, g.licences} {
		if err := step(); err != nil {
			return err
		}
	}
	log.Printf("wrote %d bytes under %s", g.written, g.out)
	return nil
}

func (g *gen) write(rel string, data []byte) error {
	p := filepath.Join(g.out, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	g.written += int64(len(data))
	return os.WriteFile(p, data, 0o644)
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func (g *gen) licences() error {
	for _, c := range [][2]string{
		{"planetlab-490/LICENSE-MIT.txt", "planetlab/LICENSE-MIT.txt"},
		{"wondernetwork-2018/LICENSE-Apache-2.0.txt", "wondernetwork/LICENSE-Apache-2.0.txt"},
		// The GeoNames extract ships without a licence file; the text of
		// CC BY 4.0 is the one shipped with the Topology Zoo.
		{"topology-zoo/LICENSE-CC-BY-4.0.txt", "geonames/LICENSE-CC-BY-4.0.txt"},
	} {
		b, err := os.ReadFile(filepath.Join(g.src, c[0]))
		if err != nil {
			return err
		}
		if err := g.write(c[1], b); err != nil {
			return err
		}
	}
	return nil
}

// ---- PlanetLab ----

func readPlanetLab(src string, slice int) (*geo.Matrix, error) {
	f, err := os.Open(filepath.Join(src, "planetlab-490", fmt.Sprintf("PlanetLabData_%d", slice)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return geo.ReadPlanetLab(f)
}

func (g *gen) planetLab() error {
	var first *geo.Matrix // slices 2.. are packed as deltas against slice 1
	total := 0
	for s := 1; s <= geo.PlanetLabSlices; s++ {
		m, err := readPlanetLab(g.src, s)
		if err != nil {
			return err
		}
		packed, offGrid, err := geo.EncodePlanetLab(m, first)
		if err != nil {
			return fmt.Errorf("PlanetLab slice %d: %w", s, err)
		}
		back, err := geo.DecodePlanetLab(packed, first)
		if err != nil {
			return fmt.Errorf("PlanetLab slice %d: decode: %w", s, err)
		}
		n := m.Rows()
		lo, hi, zeros := math.Inf(1), 0.0, 0
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if back.At(i, j) != m.At(i, j) {
					return fmt.Errorf("PlanetLab slice %d: (%d,%d) decodes to %v, source %v", s, i, j, back.At(i, j), m.At(i, j))
				}
				if j > i {
					v := m.At(i, j)
					lo, hi = min(lo, v), max(hi, v)
					if v == 0 {
						zeros++
					}
				}
			}
		}
		if s == 1 {
			first = m
		}
		if err := g.write(fmt.Sprintf("planetlab/slice%02d.bin.gz", s), packed); err != nil {
			return err
		}
		total += len(packed)
		log.Printf("PlanetLab slice %2d: %d×%d, exactly symmetric, off-diagonal min %.3f max %.1f ms, %d zero, %d exceptions off the µs grid; %d bytes",
			s, n, n, lo, hi, zeros, offGrid, len(packed))
	}
	log.Printf("PlanetLab: %d bytes for %d slices, decoded exactly", total, geo.PlanetLabSlices)
	return nil
}

// ---- WonderNetwork ----

type wonderData struct {
	cities  []geo.City
	pings   []geo.Ping
	set     *geo.PingSet
	fixed   []string
	csvText []byte
}

// readWonder reads the raw WonderNetwork files, corrects the coordinates
// and builds the PingSet.
func readWonder(src string) (*wonderData, error) {
	dir := filepath.Join(src, "wondernetwork-2018")
	f, err := os.Open(filepath.Join(dir, "cities.csv"))
	if err != nil {
		return nil, err
	}
	listed, err := geo.ReadWonderCities(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(dir, "Data"))
	if err != nil {
		return nil, err
	}
	byName := map[string]geo.City{}
	for _, c := range listed {
		byName[c.Name] = c
	}
	var cities []geo.City
	known := map[string]bool{}
	var pings []geo.Ping
	for _, e := range ents {
		name := strings.ReplaceAll(e.Name(), "+", " ")
		c, ok := byName[name]
		if !ok {
			c = geo.City{Name: name, ASCIIName: name, Lat: math.NaN(), Lon: math.NaN()}
		}
		known[name] = ok
		cities = append(cities, c)
		f, err := os.Open(filepath.Join(dir, "Data", e.Name(), e.Name()+"Ping.csv"))
		if err != nil {
			return nil, err
		}
		p, err := geo.ReadWonderPings(name, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		pings = append(pings, p...)
	}
	if len(cities) != len(listed)+1 {
		return nil, fmt.Errorf("%d source directories for %d listed cities", len(cities), len(listed))
	}
	sort.Slice(cities, func(a, b int) bool { return cities[a].Name < cities[b].Name })
	index := map[string]int{}
	for i, c := range cities {
		index[c.Name] = i
	}
	// Countries from the destination labels "<City> <Country>, <Continent>".
	byLen := slices.Clone(cities)
	sort.SliceStable(byLen, func(a, b int) bool { return len(byLen[a].Name) > len(byLen[b].Name) })
	n := len(cities)
	km := make([]float64, n*n)
	for i := range km {
		km[i] = math.NaN()
	}
	for _, p := range pings {
		for _, c := range byLen {
			if !strings.HasPrefix(p.To, c.Name+" ") {
				continue
			}
			rest := p.To[len(c.Name)+1:]
			country := rest
			if k := strings.LastIndex(rest, ", "); k >= 0 {
				country = rest[:k]
			}
			j := index[c.Name]
			if cities[j].Country != "" && cities[j].Country != country {
				return nil, fmt.Errorf("city %q labelled with countries %q and %q", c.Name, cities[j].Country, country)
			}
			cities[j].Country = country
			i := index[p.From]
			km[i*n+j], km[j*n+i] = p.Km, p.Km
			break
		}
	}
	fixed, err := fixCoordinates(cities, known, km)
	if err != nil {
		return nil, err
	}
	set, err := geo.NewPingSet(cities, pings)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"city", "country", "lat", "long", "population"})
	for _, c := range cities {
		w.Write([]string{c.Name, c.Country, strconv.FormatFloat(c.Lat, 'f', -1, 64),
			strconv.FormatFloat(c.Lon, 'f', -1, 64), strconv.Itoa(c.Population)})
	}
	w.Flush()
	return &wonderData{cities: cities, pings: pings, set: set, fixed: fixed, csvText: b.Bytes()}, nil
}

// fixCoordinates re-derives, from the published distances km (n×n, NaN where
// unknown), the coordinates of the cities whose listed coordinates disagree
// with them (median |error| > 25 km) or are unknown.
func fixCoordinates(cities []geo.City, known map[string]bool, km []float64) ([]string, error) {
	n := len(cities)
	const tolKm = 25
	residual := func(lat, lon float64, i int, use func(j int) bool) []float64 {
		var r []float64
		for j := 0; j < n; j++ {
			if j == i || !use(j) || math.IsNaN(km[i*n+j]) {
				continue
			}
			r = append(r, geo.GreatCircleKm(lat, lon, cities[j].Lat, cities[j].Lon)-km[i*n+j])
		}
		return r
	}
	medAbs := func(r []float64) float64 {
		a := make([]float64, len(r))
		for k, v := range r {
			a[k] = math.Abs(v)
		}
		slices.Sort(a)
		if len(a) == 0 {
			return math.Inf(1)
		}
		return a[len(a)/2]
	}
	good := make([]bool, n)
	for i, c := range cities {
		good[i] = known[c.Name]
	}
	for i, c := range cities {
		if good[i] {
			good[i] = medAbs(residual(c.Lat, c.Lon, i, func(j int) bool { return known[cities[j].Name] })) <= tolKm
		}
	}
	var fixed []string
	for i, c := range cities {
		if good[i] {
			continue
		}
		use := func(j int) bool { return good[j] }
		cost := func(lat, lon float64) float64 {
			s := 0.0
			for _, r := range residual(lat, lon, i, use) {
				s += r * r
			}
			return s
		}
		bestLat, bestLon, best := 0.0, 0.0, math.Inf(1)
		for lat := -87.0; lat <= 87; lat += 3 {
			for lon := -180.0; lon < 180; lon += 3 {
				if v := cost(lat, lon); v < best {
					bestLat, bestLon, best = lat, lon, v
				}
			}
		}
		for step := 1.5; step > 1e-6; {
			moved := false
			for _, d := range [][2]float64{{step, 0}, {-step, 0}, {0, step}, {0, -step}} {
				lat, lon := bestLat+d[0], bestLon+d[1]
				if lat < -90 || lat > 90 || lon < -180 || lon > 180 {
					continue
				}
				if v := cost(lat, lon); v < best {
					bestLat, bestLon, best, moved = lat, lon, v, true
				}
			}
			if !moved {
				step /= 2
			}
		}
		bestLat = math.Round(bestLat*1e4) / 1e4
		bestLon = math.Round(bestLon*1e4) / 1e4
		r := residual(bestLat, bestLon, i, use)
		mr := medAbs(r)
		if mr > 5 {
			return nil, fmt.Errorf("cannot place %s: median distance error %.1f km after the fit", c.Name, mr)
		}
		was := "not in cities.csv"
		if known[c.Name] {
			was = fmt.Sprintf("cities.csv %.4f,%.4f", c.Lat, c.Lon)
		}
		line := fmt.Sprintf("%s (%s): %s -> %.4f,%.4f (moved %.0f km; median distance error %.1f km over %d cities)",
			c.Name, c.Country, was, bestLat, bestLon, geo.GreatCircleKm(c.Lat, c.Lon, bestLat, bestLon), mr, len(r))
		fixed = append(fixed, line)
		cities[i].Lat, cities[i].Lon = bestLat, bestLon
	}
	return fixed, nil
}

func encodeWonderRTT(set *geo.PingSet) ([]byte, error) {
	n := set.Len()
	raw := []byte("OWWN")
	raw = append(raw, 1, 0, 0, 0)
	raw = binary.BigEndian.AppendUint16(raw, uint16(n))
	for _, get := range []func(i, j int) (float64, bool){set.RTT, set.MinRTT} {
		vals := make([]uint32, n*n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				v, ok := get(i, j)
				if !ok {
					continue
				}
				c := math.Round(v * 100)
				if float64(uint32(c))/100 != v || c+1 >= 1<<24 {
					return nil, fmt.Errorf("RTT %v (%d→%d) is not a whole number of 0.01 ms", v, i, j)
				}
				vals[i*n+j] = uint32(c) + 1
			}
		}
		for shift := 16; shift >= 0; shift -= 8 {
			for _, v := range vals {
				raw = append(raw, byte(v>>shift))
			}
		}
	}
	return gz(raw), nil
}

// decodeWonderRTT is an independent decoder used to check the encoder.
func decodeWonderRTT(packed []byte, n int) (avg, mn []float64, err error) {
	raw, err := gunzip(packed)
	if err != nil {
		return nil, nil, err
	}
	if int(binary.BigEndian.Uint16(raw[8:])) != n || len(raw) != 10+6*n*n {
		return nil, nil, errors.New("bad packed RTT header")
	}
	out := [2][]float64{make([]float64, n*n), make([]float64, n*n)}
	for part := range out {
		p := raw[10+part*3*n*n:]
		for k := range out[part] {
			v := uint32(p[k])<<16 | uint32(p[n*n+k])<<8 | uint32(p[2*n*n+k])
			out[part][k] = math.NaN()
			if v > 0 {
				out[part][k] = float64(v-1) / 100
			}
		}
	}
	return out[0], out[1], nil
}

func (g *gen) wonder() error {
	w, err := readWonder(g.src)
	if err != nil {
		return fmt.Errorf("WonderNetwork: %w", err)
	}
	packed, err := encodeWonderRTT(w.set)
	if err != nil {
		return fmt.Errorf("WonderNetwork: %w", err)
	}
	avg, mn, err := decodeWonderRTT(packed, w.set.Len())
	if err != nil {
		return err
	}
	n := w.set.Len()
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a, ok := w.set.RTT(i, j)
			m, _ := w.set.MinRTT(i, j)
			if !ok {
				a, m = math.NaN(), math.NaN()
			}
			if !same(a, avg[i*n+j]) || !same(m, mn[i*n+j]) {
				return fmt.Errorf("WonderNetwork: pair %d→%d does not round-trip", i, j)
			}
		}
	}
	back, err := geo.ReadWonderCities(bytes.NewReader(w.csvText))
	if err != nil || !slices.Equal(back, w.cities) {
		return fmt.Errorf("WonderNetwork: city list does not round-trip (%v)", err)
	}
	both, one, none := coverage(w.set)
	for _, f := range w.fixed {
		log.Printf("WonderNetwork coordinates: %s", f)
	}
	log.Printf("WonderNetwork: %d cities, %d pings read, %d to destinations that are not sources, %d directed pairs of %d (%d unordered pairs both ways, %d one way, %d unmeasured)",
		n, len(w.pings), w.set.Unresolved(), w.set.Pairs(), n*(n-1), both, one, none)
	cz := gz(w.csvText)
	log.Printf("WonderNetwork: cities.csv.gz %d bytes, rtt.bin.gz %d bytes, decoded exactly", len(cz), len(packed))
	if err := g.write("wondernetwork/cities.csv.gz", cz); err != nil {
		return err
	}
	return g.write("wondernetwork/rtt.bin.gz", packed)
}

func coverage(s *geo.PingSet) (both, one, none int) {
	n := s.Len()
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			_, a := s.RTT(i, j)
			_, b := s.RTT(j, i)
			switch {
			case a && b:
				both++
			case a || b:
				one++
			default:
				none++
			}
		}
	}
	return
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// ---- GeoNames ----

func (g *gen) geoNames() error {
	raw, err := os.ReadFile(filepath.Join(g.src, "geonames-cities-100k", "cities100000.txt"))
	if err != nil {
		return err
	}
	want, err := geo.ReadGeoNames(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	keep := map[int]bool{1: true, 2: true, 4: true, 5: true, 8: true, 14: true}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		f := strings.Split(line, "\t")
		for k := range f {
			if !keep[k] {
				f[k] = ""
			}
		}
		b.WriteString(strings.Join(f, "\t"))
		b.WriteByte('\n')
	}
	got, err := geo.ReadGeoNames(bytes.NewReader(b.Bytes()))
	if err != nil || !slices.Equal(got, want) {
		return fmt.Errorf("GeoNames: stripped file does not reproduce the source (%v)", err)
	}
	z := gz(b.Bytes())
	log.Printf("GeoNames: %d cities, %d bytes stripped, %d bytes gzipped", len(want), b.Len(), len(z))
	return g.write("geonames/cities100000.txt.gz", z)
}

// ---- verify ----

func (g *gen) verify() error {
	for s := 1; s <= geo.PlanetLabSlices; s++ {
		want, err := readPlanetLab(g.src, s)
		if err != nil {
			return err
		}
		got, err := geo.PlanetLab(s)
		if err != nil {
			return err
		}
		if !equalMatrix(got, want) {
			return fmt.Errorf("geo.PlanetLab(%d) differs from the source", s)
		}
	}
	log.Printf("verify: geo.PlanetLab(1..%d) equals the source bit for bit", geo.PlanetLabSlices)
	w, err := readWonder(g.src)
	if err != nil {
		return err
	}
	set, err := geo.WonderNetwork()
	if err != nil {
		return err
	}
	if !slices.Equal(set.Cities(), w.cities) || set.Pairs() != w.set.Pairs() {
		return errors.New("geo.WonderNetwork() cities or pair count differ from the source")
	}
	for i := 0; i < set.Len(); i++ {
		for j := 0; j < set.Len(); j++ {
			a1, ok1 := set.RTT(i, j)
			a2, ok2 := w.set.RTT(i, j)
			m1, _ := set.MinRTT(i, j)
			m2, _ := w.set.MinRTT(i, j)
			if ok1 != ok2 || a1 != a2 || m1 != m2 {
				return fmt.Errorf("geo.WonderNetwork() pair %d→%d differs from the source", i, j)
			}
		}
	}
	log.Printf("verify: geo.WonderNetwork() equals the source (%d cities, %d pairs)", set.Len(), set.Pairs())
	f, err := os.Open(filepath.Join(g.src, "geonames-cities-100k", "cities100000.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	want, err := geo.ReadGeoNames(f)
	if err != nil {
		return err
	}
	got, err := geo.GeoNamesCities()
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return errors.New("geo.GeoNamesCities() differs from the source")
	}
	log.Printf("verify: geo.GeoNamesCities() equals the source (%d cities)", len(got))
	return nil
}

func equalMatrix(a, b *geo.Matrix) bool {
	if !slices.Equal(a.RowNames(), b.RowNames()) || !slices.Equal(a.ColNames(), b.ColNames()) {
		return false
	}
	for i := 0; i < a.Rows(); i++ {
		for j := 0; j < a.Cols(); j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
				return false
			}
		}
	}
	return true
}

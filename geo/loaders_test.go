package geo

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"strings"
	"testing"
)

// checkParseError asserts that err is a *ParseError at line and column
// (0: not checked) whose message contains every word of want.
func checkParseError(t *testing.T, err error, line, col int, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", want)
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ParseError", err, err)
	}
	if line != 0 && pe.Line != line {
		t.Errorf("error %q: line %d, want %d", err, pe.Line, line)
	}
	if col != 0 && pe.Column != col {
		t.Errorf("error %q: column %d, want %d", err, pe.Column, col)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestReadPlanetLab(t *testing.T) {
	m, err := ReadPlanetLab(strings.NewReader("0\t1.5\t2\n1.5 0 3.25\n\n2\t3.25\t0\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows() != 3 || !m.Square() || m.RowName(2) != "pl002" || m.At(1, 2) != 3.25 || m.At(2, 0) != 2 {
		t.Fatalf("bad matrix %v %v", m.RowNames(), m.Row(1))
	}
}

func TestReadPlanetLabErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		line, col int
		want      []string
		is        error
	}{
		{"empty", "", 0, 0, []string{"no rows"}, ErrShape},
		{"blank only", "\n \n", 0, 0, []string{"no rows"}, ErrShape},
		{"ragged", "0\t1\n1\t0\t2\n", 2, 0, []string{"line 2", "3 entries", "first row has 2"}, ErrShape},
		{"not square: too few rows", "0\t1\t2\n1\t0\t3\n", 2, 0, []string{"2 rows of 3 columns"}, ErrShape},
		{"not square: too many rows", "0\t1\n1\t0\n2\t2\n", 3, 0, []string{"more than 2 rows"}, ErrShape},
		{"not a number", "0\t1\n1\tabc\n", 2, 2, []string{"line 2, column 2", `"abc" is not a number`}, ErrSyntax},
		{"NaN", "0\tNaN\n1\t0\n", 1, 2, []string{"column 2", "NaN"}, ErrInvalidLatency},
		{"infinite", "0\t1\n+Inf\t0\n", 2, 1, []string{"infinite"}, ErrInvalidLatency},
		{"negative", "0\t-1\n1\t0\n", 1, 2, []string{"negative"}, ErrInvalidLatency},
		{"diagonal", "0\t1\n1\t7\n", 2, 2, []string{"diagonal entry is 7"}, ErrShape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPlanetLab(strings.NewReader(tc.in))
			checkParseError(t, err, tc.line, tc.col, tc.want...)
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestPlanetLabEmbedded(t *testing.T) {
	// Spot values read from the source files PlanetLabData_1, _2, _15, _18.
	for _, tc := range []struct {
		slice, i, j int
		want        float64
	}{
		{1, 0, 1, 0.175}, {1, 0, 2, 2.553}, {1, 0, 3, 121.42}, {1, 489, 0, 16.124}, {1, 489, 488, 40.021},
		{1, 290, 379, 5.5064}, {1, 379, 290, 5.5064}, {1, 299, 389, 7.0221},
		{2, 0, 1, 0.162}, {2, 0, 3, 121.91}, {2, 489, 0, 14.796}, {2, 489, 488, 39.409}, {2, 290, 379, 5.5064},
		{18, 0, 1, 0.169}, {18, 0, 2, 2.531}, {18, 0, 3, 121.23}, {18, 489, 0, 14.695}, {18, 489, 488, 39.259},
		{15, 197, 362, 7892.8}, {15, 362, 197, 7892.8}, // the largest value of all slices
	} {
		m, err := PlanetLab(tc.slice)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.At(tc.i, tc.j); got != tc.want {
			t.Errorf("slice %d (%d,%d) = %v, want %v", tc.slice, tc.i, tc.j, got, tc.want)
		}
	}
	for s := 1; s <= PlanetLabSlices; s++ {
		m, err := PlanetLab(s)
		if err != nil {
			t.Fatal(err)
		}
		if m.Rows() != 490 || !m.Square() || !m.Symmetric(0) || m.RowName(0) != "pl000" || m.RowName(489) != "pl489" {
			t.Fatalf("slice %d: %d rows, square %v, symmetric %v", s, m.Rows(), m.Square(), m.Symmetric(0))
		}
		for i := 0; i < 490; i++ {
			for j := 0; j < 490; j++ {
				if v := m.At(i, j); (i == j) != (v == 0) {
					t.Fatalf("slice %d (%d,%d) = %v", s, i, j, v)
				}
			}
		}
		again, _ := PlanetLab(s)
		if again != m {
			t.Errorf("slice %d decoded twice", s)
		}
	}
	for _, s := range []int{0, -1, 19} {
		if _, err := PlanetLab(s); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("PlanetLab(%d) error %v", s, err)
		}
	}
}

func TestPlanetLabSliceMaximum(t *testing.T) {
	m, _ := PlanetLab(15)
	best, bi, bj := 0.0, 0, 0
	for i := 0; i < m.Rows(); i++ {
		for j := 0; j < m.Cols(); j++ {
			if v := m.At(i, j); v > best {
				best, bi, bj = v, i, j
			}
		}
	}
	if best != 7892.8 {
		t.Errorf("slice 15 maximum %v at (%d,%d), want 7892.8", best, bi, bj)
	}
}

func TestDecodePlanetLabRejectsCorruptData(t *testing.T) {
	good, err := planetLabFS.ReadFile("data/planetlab/slice01.bin.gz")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := gunzip(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, []byte("not gzip"), gz(t, raw[:100]), gz(t, append([]byte("XXXX"), raw[4:]...)), gz(t, raw[:len(raw)-3])} {
		if _, _, err := decodePlanetLab(bad, nil); err == nil {
			t.Errorf("decoding %d corrupt bytes succeeded", len(bad))
		}
	}
	if _, _, err := decodePlanetLab(good, []uint32{1}); err != nil {
		t.Errorf("absolute slice with a base: %v", err)
	}
	d2, _ := planetLabFS.ReadFile("data/planetlab/slice02.bin.gz")
	if _, _, err := decodePlanetLab(d2, []uint32{1, 2}); err == nil {
		t.Error("delta slice against a short base decoded")
	}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestTriangleIndex(t *testing.T) {
	for _, n := range []int{2, 3, 7, 490} {
		k := 0
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				if gi, gj := triangleIndex(n, k); gi != i || gj != j {
					t.Fatalf("n=%d k=%d: (%d,%d), want (%d,%d)", n, k, gi, gj, i, j)
				}
				k++
			}
		}
	}
}

const geoNamesSample = "291074\tRas al-Khaimah\tRas al-Khaimah\tJulfa,RKT\t25.78953\t55.9432\tP\tPPLA\tAE\t\t05\t\t\t\t115949\t\t2\tAsia/Dubai\t2015-12-05\n" +
	"1850147\tTōkyō\tTokyo\t\t35.6895\t139.69171\tP\tPPLC\tJP\t\t40\t\t\t\t8336599\t\t44\tAsia/Tokyo\t2017-05-25\n"

func TestReadGeoNames(t *testing.T) {
	cs, err := ReadGeoNames(strings.NewReader(geoNamesSample + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []City{
		{Name: "Ras al-Khaimah", ASCIIName: "Ras al-Khaimah", Country: "AE", Lat: 25.78953, Lon: 55.9432, Population: 115949},
		{Name: "Tōkyō", ASCIIName: "Tokyo", Country: "JP", Lat: 35.6895, Lon: 139.69171, Population: 8336599},
	}
	if len(cs) != 2 || cs[0] != want[0] || cs[1] != want[1] {
		t.Fatalf("got %+v", cs)
	}
}

func TestReadGeoNamesErrors(t *testing.T) {
	row := func(edit func(f []string)) string {
		f := strings.Split(strings.TrimSuffix(strings.SplitAfter(geoNamesSample, "\n")[1], "\n"), "\t")
		edit(f)
		return strings.SplitAfter(geoNamesSample, "\n")[0] + strings.Join(f, "\t") + "\n"
	}
	for _, tc := range []struct {
		name, in string
		col      int
		want     []string
	}{
		{"columns", row(func(f []string) { f[18] += "\textra" }), 0, []string{"line 2", "20 tab-separated fields, want 19"}},
		{"empty name", row(func(f []string) { f[1] = "" }), 2, []string{"line 2, column 2 (name)", "empty name"}},
		{"latitude not a number", row(func(f []string) { f[4] = "north" }), 5, []string{"(latitude)", `"north" is not a number`}},
		{"latitude range", row(func(f []string) { f[4] = "91" }), 5, []string{"(latitude)", "outside [-90, 90]"}},
		{"longitude range", row(func(f []string) { f[5] = "-180.5" }), 6, []string{"(longitude)", "outside [-180, 180]"}},
		{"longitude NaN", row(func(f []string) { f[5] = "NaN" }), 6, []string{"(longitude)"}},
		{"population", row(func(f []string) { f[14] = "1e6" }), 15, []string{"column 15 (population)", "not a non-negative integer"}},
		{"negative population", row(func(f []string) { f[14] = "-5" }), 15, []string{"(population)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadGeoNames(strings.NewReader(tc.in))
			checkParseError(t, err, 2, tc.col, tc.want...)
		})
	}
}

func TestGeoNamesEmbedded(t *testing.T) {
	cs, err := GeoNamesCities()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4410 {
		t.Fatalf("%d cities, want 4410", len(cs))
	}
	// First and last lines of cities100000.txt, and Tokyo.
	first := City{Name: "Ras al-Khaimah", ASCIIName: "Ras al-Khaimah", Country: "AE", Lat: 25.78953, Lon: 55.9432, Population: 115949}
	last := City{Name: "Chitungwiza", ASCIIName: "Chitungwiza", Country: "ZW", Lat: -18.01274, Lon: 31.07555, Population: 340360}
	if cs[0] != first || cs[len(cs)-1] != last {
		t.Errorf("first %+v, last %+v", cs[0], cs[len(cs)-1])
	}
	total, found := 0, false
	for _, c := range cs {
		total += c.Population
		if c.ASCIIName == "Tokyo" && c.Country == "JP" {
			found = c.Lat == 35.6895 && c.Lon == 139.69171 && c.Population == 8336599
		}
		if c.Population < 100000 {
			t.Errorf("%+v has fewer than 100,000 people", c)
		}
	}
	if !found {
		t.Error("Tokyo missing or wrong")
	}
	if total < 2_000_000_000 || total > 2_050_000_000 {
		t.Errorf("total population %d, want about 2.02 billion", total)
	}
	cs[0].Name = "changed"
	if again, _ := GeoNamesCities(); again[0].Name != first.Name {
		t.Error("GeoNamesCities returned shared storage")
	}
}

const wonderCitiesSample = "city,Lat,Long,Population\nAdelaide,-34.928661,138.598633,1225235\n\"New York\",40.7142691,-74.0059729,8175133\n"

func TestReadWonderCities(t *testing.T) {
	cs, err := ReadWonderCities(strings.NewReader(wonderCitiesSample))
	if err != nil {
		t.Fatal(err)
	}
	want := City{Name: "New York", ASCIIName: "New York", Lat: 40.7142691, Lon: -74.0059729, Population: 8175133}
	if len(cs) != 2 || cs[1] != want {
		t.Fatalf("got %+v", cs)
	}
	cs, err = ReadWonderCities(strings.NewReader("Population,COUNTRY,lon,lat,City\n5,Chile,1.5,-2,X\n"))
	if err != nil || cs[0] != (City{Name: "X", ASCIIName: "X", Country: "Chile", Lat: -2, Lon: 1.5, Population: 5}) {
		t.Fatalf("reordered header: %+v, %v", cs, err)
	}
}

func TestReadWonderCitiesErrors(t *testing.T) {
	const h = "city,Lat,Long,Population\n"
	for _, tc := range []struct {
		name, in  string
		line, col int
		want      []string
	}{
		{"empty", "", 0, 0, []string{"empty input"}},
		{"missing column", "city,Lat,Population\nA,1,2\n", 1, 0, []string{"no \"long\" column"}},
		{"duplicate header", "city,Lat,Long,lat,Population\n", 1, 4, []string{"duplicate header"}},
		{"field count", h + "A,1,2\n", 2, 0, []string{"3 fields, header has 4"}},
		{"empty name", h + " ,1,2,3\n", 2, 1, []string{"(city)", "empty city name"}},
		{"duplicate", h + "A,1,2,3\nB,1,2,3\nA,1,2,3\n", 4, 1, []string{"line 4", "also on line 2"}},
		{"lat", h + "A,x,2,3\n", 2, 2, []string{"column 2 (lat)", "not a number"}},
		{"long range", h + "A,1,200,3\n", 2, 3, []string{"(long)", "outside"}},
		{"population", h + "A,1,2,many\n", 2, 4, []string{"(population)"}},
		{"csv quote", h + "\"A,1,2,3\n", 2, 0, []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadWonderCities(strings.NewReader(tc.in))
			checkParseError(t, err, tc.line, tc.col, tc.want...)
		})
	}
}

const wonderPingHeader = "City,Distance,hidden,Average,hidden.1,% of SOLf/o,hidden.2,min,hidden.3,max,hidden.4,mdev,hidden.5,Last Checked\n"
const wonderPingSample = wonderPingHeader +
	"\"Adelaide Australia, Oceania\",15926km,15926,336.80ms,336.8,47.40%,47.4,336.37ms,336.37,337.98ms,337.98,0.74ms,0.74,2018-11-10 12:19:16\n" +
	"\"New York United States, North America\",5860km,5860,84.95ms,84.95,67.72%,67.72,84.78ms,84.78,85.41ms,85.41,0.17ms,0.17,2018-11-10 12:19:16\n"

func TestReadWonderPings(t *testing.T) {
	ps, err := ReadWonderPings("Amsterdam", strings.NewReader(wonderPingSample))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d pings", len(ps))
	}
	p := ps[0]
	if p.From != "Amsterdam" || p.To != "Adelaide Australia, Oceania" || p.Km != 15926 || p.Avg != 336.8 ||
		p.Min != 336.37 || p.Max != 337.98 || p.Mdev != 0.74 || p.Checked.Format("2006-01-02 15:04:05") != "2018-11-10 12:19:16" {
		t.Errorf("got %+v", p)
	}
}

func TestReadWonderPingsErrors(t *testing.T) {
	const ok = "\"A B, C\",1km,1,2ms,2,1%,1,1ms,1,3ms,3,0ms,0,2018-11-10 12:19:16\n"
	row := func(i int, v string) string {
		f := strings.Split(strings.TrimSuffix(ok, "\n"), ",")
		f[i+1] = v // +1: the quoted label holds a comma
		return wonderPingHeader + ok + strings.Join(f, ",") + "\n"
	}
	for _, tc := range []struct {
		name, in  string
		line, col int
		want      []string
	}{
		{"empty", "", 0, 0, []string{"empty input"}},
		{"missing column", "City,hidden,hidden.1,hidden.3,hidden.4\n", 1, 0, []string{"no \"hidden.5\" column"}},
		{"field count", wonderPingHeader + "\"A\",1\n", 2, 0, []string{"2 fields, header has 14"}},
		{"empty destination", wonderPingHeader + strings.Replace(ok, "\"A B, C\"", "\"\"", 1), 2, 1, []string{"(city)", "empty destination"}},
		{"km", row(2, "far"), 3, 3, []string{"line 3, column 3 (hidden)", `"far" is not a number`}},
		{"avg negative", row(4, "-2"), 3, 5, []string{"(hidden.1)", "negative"}},
		{"min NaN", row(8, "NaN"), 3, 9, []string{"(hidden.3)", "NaN"}},
		{"max missing", row(10, ""), 3, 11, []string{"(hidden.4)", "not a number"}},
		{"mdev inf", row(12, "Inf"), 3, 13, []string{"(hidden.5)", "infinite"}},
		{"avg above max", row(4, "9"), 3, 5, []string{"avg 9 ms outside [min 1, max 3]"}},
		{"time", row(13, "yesterday"), 3, 14, []string{"(last checked)", "yesterday"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadWonderPings("X", strings.NewReader(tc.in))
			checkParseError(t, err, tc.line, tc.col, tc.want...)
		})
	}
}

func TestNewPingSet(t *testing.T) {
	cities := []City{{Name: "New York"}, {Name: "New"}, {Name: "York"}}
	ps := []Ping{
		{From: "New", To: "New York United States, North America", Avg: 2, Min: 1},
		{From: "New York", To: "New United States, North America", Avg: 3, Min: 2},
		{From: "New", To: "York United Kingdom, Eurasia", Avg: 80, Min: 79},
		{From: "York", To: "Nowhere Land, Eurasia", Avg: 80, Min: 79},
		{From: "York", To: "New", Avg: 81, Min: 70},
	}
	s, err := NewPingSet(cities, ps)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pairs() != 4 || s.Unresolved() != 1 || s.Len() != 3 {
		t.Fatalf("pairs %d unresolved %d", s.Pairs(), s.Unresolved())
	}
	if v, ok := s.RTT(1, 0); !ok || v != 2 {
		t.Errorf("New→New York = %v %v", v, ok)
	}
	if v, ok := s.MinRTT(2, 1); !ok || v != 70 {
		t.Errorf("York→New min = %v %v", v, ok)
	}
	if _, ok := s.RTT(0, 2); ok {
		t.Error("New York→York measured")
	}
	if _, ok := s.RTT(0, 7); ok {
		t.Error("out of range measured")
	}
	for _, tc := range []struct {
		name string
		ps   []Ping
		want string
	}{
		{"unknown source", []Ping{{From: "Paris", To: "New"}}, "not a city"},
		{"self", []Ping{{From: "New", To: "New Zealand, Oceania"}}, "to itself"},
		{"twice", []Ping{{From: "New", To: "York", Avg: 1}, {From: "New", To: "York", Avg: 1}}, "second measurement"},
		{"negative", []Ping{{From: "New", To: "York", Avg: -1}}, "negative"},
	} {
		if _, err := NewPingSet(cities, tc.ps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewPingSet([]City{{Name: "A"}, {Name: "A"}}, nil); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("duplicate cities: %v", err)
	}
}

func TestWonderNetworkEmbedded(t *testing.T) {
	s, err := WonderNetwork()
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 242 || s.Pairs() != 57807 {
		t.Fatalf("%d cities, %d pairs", s.Len(), s.Pairs())
	}
	idx := func(name string) int {
		i, ok := s.CityIndex(name)
		if !ok {
			t.Fatalf("no city %q", name)
		}
		return i
	}
	// Spot values from Data/Amsterdam/AmsterdamPing.csv, Data/New+York/…,
	// Data/Tokyo/TokyoPing.csv.
	for _, tc := range []struct {
		from, to string
		avg, min float64
	}{
		{"Amsterdam", "Adelaide", 336.8, 336.37},
		{"Amsterdam", "New York", 84.95, 84.78},
		{"Amsterdam", "Tokyo", 244.85, 244.42},
		{"New York", "Adelaide", 241.52, 241.31},
		{"New York", "Tokyo", 215.17, 215.06},
		{"Tokyo", "Amsterdam", 245.06, 244.4},
	} {
		i, j := idx(tc.from), idx(tc.to)
		a, ok1 := s.RTT(i, j)
		m, ok2 := s.MinRTT(i, j)
		if !ok1 || !ok2 || a != tc.avg || m != tc.min {
			t.Errorf("%s→%s = %v/%v (%v), want %v/%v", tc.from, tc.to, a, m, ok1, tc.avg, tc.min)
		}
	}
	both, one, none := 0, 0, 0
	for i := 0; i < s.Len(); i++ {
		for j := i + 1; j < s.Len(); j++ {
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
	if both != 28664 || one != 479 || none != 18 {
		t.Errorf("coverage both %d one %d none %d, want 28664 479 18", both, one, none)
	}
	// Corrected coordinates: Portland is in Oregon, not Jamaica; Westpoort
	// (missing from cities.csv) is in Amsterdam.
	pdx := s.City(idx("Portland"))
	if pdx.Country != "United States" || math.Abs(pdx.Lat-45.5) > 0.1 || math.Abs(pdx.Lon+122.7) > 0.1 {
		t.Errorf("Portland at %+v", pdx)
	}
	if d := s.City(idx("Westpoort")).Km(s.City(idx("Amsterdam"))); d > 20 {
		t.Errorf("Westpoort %v km from Amsterdam", d)
	}
	if s.City(idx("Adelaide")).Lat != -34.928661 {
		t.Errorf("Adelaide moved: %+v", s.City(idx("Adelaide")))
	}
	// A pair measured in neither direction.
	var a, b string
	for i := 0; i < s.Len() && a == ""; i++ {
		for j := i + 1; j < s.Len(); j++ {
			if _, ok := s.PairRTT(i, j); !ok {
				a, b = s.City(i).Name, s.City(j).Name
				break
			}
		}
	}
	if _, err := s.Matrix([]string{"Amsterdam", a, b}, SymMean); !errors.Is(err, ErrMissingPair) || !strings.Contains(err.Error(), a) {
		t.Errorf("Matrix over unmeasured pair %s–%s: %v", a, b, err)
	}
}

func TestPingSetMatrix(t *testing.T) {
	cities := []City{{Name: "A"}, {Name: "B"}, {Name: "C"}}
	s, err := NewPingSet(cities, []Ping{
		{From: "A", To: "B", Avg: 10, Min: 9}, {From: "B", To: "A", Avg: 20, Min: 9},
		{From: "C", To: "A", Avg: 5, Min: 4}, {From: "B", To: "C", Avg: 7, Min: 6}, {From: "C", To: "B", Avg: 8, Min: 6},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sym       Symmetrization
		ab, ba    float64
		names     []string
		ac, bcRow float64
	}{
		{SymMean, 15, 15, []string{"A", "B", "C"}, 5, 7.5},
		{SymMin, 10, 10, []string{"A", "B", "C"}, 5, 7},
		{SymMax, 20, 20, []string{"A", "B", "C"}, 5, 8},
		{SymUpper, 10, 10, []string{"A", "B", "C"}, 5, 7},
	} {
		m, err := s.Matrix(tc.names, tc.sym)
		if err != nil {
			t.Fatal(err)
		}
		if m.At(0, 1) != tc.ab || m.At(1, 0) != tc.ba || m.At(0, 2) != tc.ac || m.At(2, 0) != tc.ac || m.At(1, 2) != tc.bcRow || m.At(0, 0) != 0 {
			t.Errorf("%v: %v %v %v", tc.sym, m.Row(0), m.Row(1), m.Row(2))
		}
	}
	m, err := s.Matrix([]string{"B", "A"}, SymUpper)
	if err != nil || m.At(0, 1) != 20 || m.RowName(0) != "B" {
		t.Errorf("SymUpper follows the order of names: %v %v", m, err)
	}
	if _, err := s.Matrix([]string{"A", "Z"}, SymMean); !errors.Is(err, ErrUnknownName) {
		t.Errorf("unknown city: %v", err)
	}
	if _, err := s.Matrix([]string{"A", "A"}, SymMean); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("repeated city: %v", err)
	}
	if _, err := s.Matrix([]string{"A"}, Symmetrization(9)); err == nil {
		t.Error("unknown symmetrization accepted")
	}
}

func TestGreatCircleKm(t *testing.T) {
	for _, tc := range []struct {
		lat1, lon1, lat2, lon2, want, tol float64
	}{
		{0, 0, 0, 0, 0, 0},
		{0, 0, 0, 180, math.Pi * EarthRadiusKm, 1e-6},
		{90, 0, -90, 0, math.Pi * EarthRadiusKm, 1e-6},
		{0, 0, 0, 1, 111.195, 0.001},
		{51.5074, -0.1278, 48.8566, 2.3522, 343.5, 1},    // London–Paris
		{40.7128, -74.0060, 35.6895, 139.6917, 10849, 5}, // New York–Tokyo
		{0, 179.5, 0, -179.5, 111.195, 0.001},            // across the antimeridian
	} {
		got := GreatCircleKm(tc.lat1, tc.lon1, tc.lat2, tc.lon2)
		if math.Abs(got-tc.want) > tc.tol {
			t.Errorf("GreatCircleKm(%v,%v,%v,%v) = %v, want %v", tc.lat1, tc.lon1, tc.lat2, tc.lon2, got, tc.want)
		}
		if back := GreatCircleKm(tc.lat2, tc.lon2, tc.lat1, tc.lon1); math.Abs(back-got) > 1e-9 {
			t.Errorf("not symmetric: %v vs %v", got, back)
		}
	}
}

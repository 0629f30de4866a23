package geo

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzReadPlanetLab(f *testing.F) {
	f.Add("0\t0.175\t2.553\n0.175\t0\t121.42\n2.553\t121.42\t0\n")
	f.Add("0 1\n1 0\n")
	f.Add("0\n")
	f.Add("0\t1\n1\t0\t2\n")
	f.Add("0\t-1\n1\t0\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ReadPlanetLab(strings.NewReader(in))
		if err != nil {
			return
		}
		if !m.Square() {
			t.Fatalf("non-square result %d×%d", m.Rows(), m.Cols())
		}
		for i := 0; i < m.Rows(); i++ {
			if m.At(i, i) != 0 {
				t.Fatalf("diagonal %d = %v", i, m.At(i, i))
			}
		}
	})
}

func FuzzReadMatrixCSV(f *testing.F) {
	pl, _ := PlanetLab(1)
	sub, _ := pl.SubSquare([]int{0, 1, 2})
	var b bytes.Buffer
	sub.WriteCSV(&b)
	f.Add(b.String())
	f.Add("name,a,b\nx,1,2\ny,0.5,1e3\n")
	f.Add(",\"q,1\",b\n\"r\"\"1\",1,2\n")
	f.Add("name\n")
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ReadMatrixCSV(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := m.WriteCSV(&out); err != nil {
			return // names the CSV writer cannot represent
		}
		back, err := ReadMatrixCSV(&out)
		if err != nil {
			t.Fatalf("re-reading written CSV: %v\n%q", err, out.String())
		}
		if !equalMatrices(m, back) {
			t.Fatalf("round trip changed the matrix:\n%q\n%q", in, out.String())
		}
	})
}

func FuzzReadGeoNames(f *testing.F) {
	f.Add(geoNamesSample)
	f.Add(strings.Repeat("\t", 18) + "\n")
	f.Add("1\tA\tA\t\t1\t2\t\t\tXX\t\t\t\t\t\t5\t\t\t\t\n")
	f.Fuzz(func(t *testing.T, in string) {
		cs, err := ReadGeoNames(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Name == "" || !validCoord(c.Lat, c.Lon) || c.Population < 0 {
				t.Fatalf("invalid city accepted: %+v", c)
			}
		}
	})
}

func FuzzReadWonderPings(f *testing.F) {
	f.Add(wonderPingSample)
	f.Add(wonderPingHeader)
	f.Add("City,hidden,hidden.1,hidden.3,hidden.4,hidden.5\nA B,1,2,1,3,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		ps, err := ReadWonderPings("X", strings.NewReader(in))
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.To == "" || !(p.Min <= p.Avg && p.Avg <= p.Max) || p.Km < 0 || p.Mdev < 0 {
				t.Fatalf("invalid ping accepted: %+v", p)
			}
		}
	})
}

func FuzzReadWonderCities(f *testing.F) {
	f.Add(wonderCitiesSample)
	f.Add("city,lat,lon,population,country\nA,1,2,3,B\n")
	f.Fuzz(func(t *testing.T, in string) {
		cs, err := ReadWonderCities(strings.NewReader(in))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range cs {
			if c.Name == "" || seen[c.Name] || !validCoord(c.Lat, c.Lon) || c.Population < 0 {
				t.Fatalf("invalid city accepted: %+v", c)
			}
			seen[c.Name] = true
		}
	})
}

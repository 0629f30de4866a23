package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Lists such as balance's per-server loads ("3, 4, 5") hold commas: the
// CSV files must quote them so every row reads back with its columns.
func TestWriteCSVQuotes(t *testing.T) {
	rows := [][]string{{"run", "loads"}, {"1", Ints([]int{3, 4, 5})}, {"2", `say "hi"`}}
	path := filepath.Join(t.TempDir(), "x.csv")
	if err := WriteCSV(path, rows); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read back %q, want %q", got, rows)
	}
	if err := WriteCSV(filepath.Join(t.TempDir(), "no", "such", "dir.csv"), rows); err == nil {
		t.Error("WriteCSV into a missing directory: no error")
	}
}

func TestAlignTableAndTrim(t *testing.T) {
	got := AlignTable([][]string{{"method", "≤100 ms", "x"}, {"sa", "94.9%", ""}}, 1)
	want := "method  ≤100 ms  x\nsa        94.9%   \n"
	if got != want {
		t.Errorf("AlignTable:\n%q\nwant\n%q", got, want)
	}
	var b bytes.Buffer
	if err := WriteTrimmed(&b, []byte(got+"tail  ")); err != nil {
		t.Fatal(err)
	}
	if want := "method  ≤100 ms  x\nsa        94.9%\ntail"; b.String() != want {
		t.Errorf("WriteTrimmed: %q, want %q", b.String(), want)
	}
}

func TestFormats(t *testing.T) {
	for got, want := range map[string]string{
		Fixed(2.345, 1): "2.3", Pct(0.1234): "12.3%", Ints([]int{1, 2}): "1, 2", Ints(nil): "",
		Float(0.1): "0.1", Float(1e21): "1e+21",
		Wrap("alpha, beta, gamma", 12, "  "): "alpha, beta,\n  gamma",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestStats(t *testing.T) {
	if m := Median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("Median: %v, want 2.5", m)
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("Median: %v, want 2", m)
	}
	if Median(nil) != 0 || Mean(nil) != 0 || Quantile([]int(nil), 0.5) != 0 {
		t.Error("empty input: want zeros")
	}
	ds := []time.Duration{5, 1, 4, 2, 3}
	if q := Quantile(ds, 0.5); q != 3 {
		t.Errorf("Quantile 0.5: %v, want 3", q)
	}
	if q := Quantile(ds, 0.99); q != 5 {
		t.Errorf("Quantile 0.99: %v, want 5", q)
	}
	if q := Quantile(ds, 0); q != 1 {
		t.Errorf("Quantile 0: %v, want 1", q)
	}
	if Mean([]float64{1, 2, 6}) != 3 || Sum([]int{1, 2, 3}) != 6 || Ms(1500*time.Microsecond) != 1.5 {
		t.Error("Mean, Sum or Ms")
	}
}

// TestSavePNG: a figure of two panels and a grid of them are written as
// PNG files.
func TestSavePNG(t *testing.T) {
	dir := t.TempDir()
	p := NewPlot("t", "x", "y")
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 3}})
	if err != nil {
		t.Fatal(err)
	}
	l.Color = Blue
	p.Add(l, VLine{X: 0.5})
	Headroom(p, 1, 3)
	if p.Y.Max <= 3 {
		t.Errorf("Headroom left Y.Max at %v", p.Y.Max)
	}
	q := NewPlot("u", "x", "y")
	q.Add(l)
	for _, save := range []func(string) error{
		func(path string) error { return SavePNG(path, 6*vg.Inch, 3*vg.Inch, p, q) },
		func(path string) error { return SaveGrid(path, 6*vg.Inch, 6*vg.Inch, [][]*gplot.Plot{{p, q}, {q, p}}) },
	} {
		path := filepath.Join(dir, "f.png")
		if err := save(path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatalf("not a PNG: %v", err)
		}
	}
}

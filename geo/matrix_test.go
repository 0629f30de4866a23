package geo

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func mustMatrix(t testing.TB, rows, cols []string, data [][]float64) *Matrix {
	t.Helper()
	m, err := NewMatrix(rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func equalMatrices(a, b *Matrix) bool {
	if a.Rows() != b.Rows() || a.Cols() != b.Cols() {
		return false
	}
	for i := 0; i < a.Rows(); i++ {
		if a.RowName(i) != b.RowName(i) {
			return false
		}
		for j := 0; j < a.Cols(); j++ {
			if a.At(i, j) != b.At(i, j) {
				return false
			}
		}
	}
	for j := 0; j < a.Cols(); j++ {
		if a.ColName(j) != b.ColName(j) {
			return false
		}
	}
	return true
}

func TestNewMatrixValidation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols []string
		data       [][]float64
		is         error
		want       string
	}{
		{"row count", []string{"a"}, []string{"x"}, nil, ErrShape, "1 row names for 0 rows"},
		{"ragged", []string{"a", "b"}, []string{"x", "y"}, [][]float64{{1, 2}, {3}}, ErrShape, `row 1 ("b") has 1 entries`},
		{"NaN", []string{"a"}, []string{"x"}, [][]float64{{math.NaN()}}, ErrInvalidLatency, `NaN at row 0 ("a"), column 0 ("x")`},
		{"infinite", []string{"a"}, []string{"x"}, [][]float64{{math.Inf(1)}}, ErrInvalidLatency, "infinite"},
		{"negative", []string{"a"}, []string{"x"}, [][]float64{{-1}}, ErrInvalidLatency, "negative"},
		{"duplicate row", []string{"a", "a"}, []string{"x"}, [][]float64{{1}, {2}}, ErrDuplicateName, `row name "a"`},
		{"duplicate column", []string{"a"}, []string{"x", "x"}, [][]float64{{1, 2}}, ErrDuplicateName, `column name "x"`},
	} {
		_, err := NewMatrix(tc.rows, tc.cols, tc.data)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %v mentioning %q", tc.name, err, tc.is, tc.want)
		}
	}
	if _, err := NewSquare([]string{"a", "b"}, [][]float64{{0, 1}, {1, 2}}); !errors.Is(err, ErrShape) {
		t.Errorf("non-zero diagonal: %v", err)
	}
	if _, err := NewSquareFlat([]string{"a", "b"}, []float64{0, 1, 1}); !errors.Is(err, ErrShape) {
		t.Errorf("short flat: %v", err)
	}
	if _, err := newMatrixOwned([]string{"a"}, []string{"x"}, []float64{-2}); !errors.Is(err, ErrInvalidLatency) {
		t.Errorf("owned negative: %v", err)
	}
}

func TestMatrixSymmetrizeAndSub(t *testing.T) {
	names := []string{"a", "b", "c"}
	m, err := NewSquare(names, [][]float64{{0, 1, 4}, {3, 0, 5}, {4, 9, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Symmetric(0) || !m.Symmetric(4) {
		t.Error("Symmetric tolerance")
	}
	for _, tc := range []struct {
		s      Symmetrization
		ab, bc float64
	}{{SymMean, 2, 7}, {SymMin, 1, 5}, {SymMax, 3, 9}, {SymUpper, 1, 5}} {
		got, err := m.Symmetrize(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Symmetric(0) || got.At(0, 1) != tc.ab || got.At(2, 1) != tc.bc || got.At(0, 2) != 4 {
			t.Errorf("%v: %v %v %v", tc.s, got.Row(0), got.Row(1), got.Row(2))
		}
		if tc.s.String() == "" {
			t.Error("empty name")
		}
	}
	if m.At(0, 1) != 1 {
		t.Error("Symmetrize changed its receiver")
	}
	if _, err := m.Symmetrize(Symmetrization(7)); err == nil {
		t.Error("unknown symmetrization accepted")
	}
	sub, err := m.Sub([]int{2, 0}, []int{1})
	if err != nil || sub.Rows() != 2 || sub.Cols() != 1 || sub.At(0, 0) != 9 || sub.RowName(0) != "c" || sub.ColName(0) != "b" {
		t.Errorf("Sub: %v %v", sub, err)
	}
	if _, err := sub.Symmetrize(SymMean); !errors.Is(err, ErrShape) {
		t.Errorf("Symmetrize of rectangular: %v", err)
	}
	sq, err := m.SubSquare([]int{2, 1})
	if err != nil || !sq.Square() || sq.At(0, 1) != 9 || sq.At(1, 0) != 5 {
		t.Errorf("SubSquare: %v", err)
	}
	if _, err := m.Sub([]int{0, 0}, []int{1}); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("repeated index: %v", err)
	}
	if _, err := m.Sub([]int{3}, []int{1}); !errors.Is(err, ErrShape) {
		t.Errorf("out of range: %v", err)
	}
	byName, err := m.SubNames([]string{"c", "a"}, []string{"b"})
	if err != nil || !equalMatrices(byName, sub) {
		t.Errorf("SubNames: %v", err)
	}
	if _, err := m.SubNames([]string{"z"}, nil); !errors.Is(err, ErrUnknownName) {
		t.Errorf("SubNames unknown: %v", err)
	}
	if v, err := m.Lookup("b", "c"); err != nil || v != 5 {
		t.Errorf("Lookup: %v %v", v, err)
	}
}

func TestMatrixCSVRoundTrip(t *testing.T) {
	pl, err := PlanetLab(1)
	if err != nil {
		t.Fatal(err)
	}
	small, _ := pl.SubSquare([]int{0, 1, 2, 100, 489})
	odd := mustMatrix(t, []string{"player, one", `say "hi"`, "", " lead"}, []string{"Zürich", "x\ny", `\.`},
		[][]float64{{0.1, 1e-300, 1.7976931348623157e308}, {math.SmallestNonzeroFloat64, 0, 2}, {3, 4, 5}, {1.0 / 3, 2.0 / 3, 123456.789}})
	empty := mustMatrix(t, nil, []string{"a"}, nil)
	for _, m := range []*Matrix{small, odd, empty, pl} {
		var b bytes.Buffer
		if err := m.WriteCSV(&b); err != nil {
			t.Fatal(err)
		}
		back, err := ReadMatrixCSV(&b)
		if err != nil {
			t.Fatal(err)
		}
		if !equalMatrices(m, back) {
			t.Errorf("%d×%d matrix does not round-trip", m.Rows(), m.Cols())
		}
	}
	var b bytes.Buffer
	small.WriteCSV(&b)
	if !strings.HasPrefix(b.String(), "name,pl000,pl001,pl002,pl100,pl489\npl000,0,0.175,2.553,") {
		t.Errorf("CSV starts %q", b.String()[:80])
	}
	bad := mustMatrix(t, []string{"a\rb"}, []string{"x"}, [][]float64{{1}})
	if err := bad.WriteCSV(&b); err == nil {
		t.Error("name with carriage return written")
	}
	m, err := ReadMatrixCSV(strings.NewReader(",x,y\r\na,1,2\r\n"))
	if err != nil || m.At(0, 1) != 2 {
		t.Errorf("empty corner and CRLF: %v", err)
	}
}

func TestReadMatrixCSVErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in  string
		line, col int
		want      []string
	}{
		{"empty", "", 0, 0, []string{"empty input"}},
		{"corner", "city,x\n", 1, 1, []string{"first header field is \"city\""}},
		{"duplicate column", "name,x,x\n", 1, 0, []string{`column name "x"`}},
		{"short row", "name,x,y\na,1\n", 2, 0, []string{"line 2", "2 fields, want 3"}},
		{"long row", "name,x\na,1\nb,1,2\n", 3, 0, []string{"line 3", "3 fields, want 2"}},
		{"not a number", "name,x,y\na,1,fast\n", 2, 3, []string{"line 2, column 3 (y)", `"fast" is not a number`}},
		{"negative", "name,x\na,1\nb,-3\n", 3, 2, []string{"line 3, column 2 (x)", "negative"}},
		{"NaN", "name,x\na,NaN\n", 2, 2, []string{"NaN"}},
		{"duplicate row", "name,x\na,1\na,2\n", 0, 0, []string{`row name "a"`}},
		{"bad quote", "name,x\n\"a,1\n", 2, 0, []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMatrixCSV(strings.NewReader(tc.in))
			checkParseError(t, err, tc.line, tc.col, tc.want...)
		})
	}
}

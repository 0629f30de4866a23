package geo

import "testing"

func TestNewSquareChecksShapeBeforeDiagonal(t *testing.T) {
	if _, err := NewSquare(nil, [][]float64{{1}}); err == nil {
		t.Fatal("no error")
	}
}

func TestNewSquareRejectsNonZeroDiagonal(t *testing.T) {
	if _, err := NewSquare([]string{"a", "b"}, [][]float64{{0, 1}, {1, 2}}); err == nil {
		t.Fatal("non-zero diagonal accepted")
	}
	if _, err := NewSquare([]string{"a", "b"}, [][]float64{{0, 1}, {1, 0}}); err != nil {
		t.Fatal(err)
	}
}

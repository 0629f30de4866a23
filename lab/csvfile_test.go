package lab

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Lists such as balance's per-server loads ("3, 4, 5") hold commas: the
// CSV files must quote them so every row reads back with its columns.
func TestWriteCSVFileQuotes(t *testing.T) {
	rows := [][]string{{"run", "loads"}, {"1", ints([]int{3, 4, 5})}, {"2", `say "hi"`}}
	path := filepath.Join(t.TempDir(), "x.csv")
	if err := writeCSVFile(path, rows); err != nil {
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
}

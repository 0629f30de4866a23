package report

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
)

// WriteCSV writes rows to path as CSV (RFC 4180: fields holding commas,
// quotes or newlines are quoted), creating or truncating the file.
func WriteCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := csv.NewWriter(f).WriteAll(rows); err != nil {
		f.Close()
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Float formats x in the shortest form that reads back as the same
// float64: the form of every number in the lab's CSV files.
func Float(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

package report

import (
	"encoding/csv"
	"fmt"
	"io"
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

// Report is what every lab experiment's report does: its tables as text,
// its figures' data as CSV files and its figures as PNG files.
type Report interface {
	WriteTable(w io.Writer) error
	WriteCSV(dir string) ([]string, error)
	WritePlots(dir string) ([]string, error)
}

// WriteFiles writes r's CSV files and, if plots, its PNG figures into dir,
// and returns their paths, CSV files first.
func WriteFiles(r Report, dir string, plots bool) ([]string, error) {
	files, err := r.WriteCSV(dir)
	if err != nil || !plots {
		return files, err
	}
	pngs, err := r.WritePlots(dir)
	return append(files, pngs...), err
}

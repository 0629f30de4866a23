package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFiles writes the run's summary (summary.json, byte-identical for a
// seed unless Config.WallFrameTimes), the network's per-second series
// (series.csv), every node's per-second bytes (nodes.csv) and the
// per-kind view measures (kinds.csv) into dir
// (created if missing), and returns their paths. It fails after
// DropSeries.
func (r *Result) WriteFiles(dir string) ([]string, error) {
	s := r.sim
	if s == nil {
		return nil, errors.New("lab/harness: WriteFiles after DropSeries: the series are gone")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/harness: %w", err)
	}
	var files []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"summary.json", r.Summary.WriteJSON},
		{"series.csv", s.WriteSeriesCSV},
		{"nodes.csv", s.WriteNodeSeriesCSV},
		{"kinds.csv", func(w io.Writer) error { return WriteKindsCSV(w, r.kinds) }},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			return files, fmt.Errorf("lab/harness: %w", err)
		}
		err = f.write(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("lab/harness: %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

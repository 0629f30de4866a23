package geo

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteCSV writes m as CSV: a header row ("name" then the column names) and
// one row per row endpoint (its name, then its latencies in ms). Latencies
// are written in the shortest form that parses back to the same float64, so
// ReadMatrixCSV(WriteCSV(m)) reproduces m exactly. Names must not contain a
// carriage return (CSV readers fold "\r\n" inside quotes to "\n").
func (m *Matrix) WriteCSV(w io.Writer) error {
	for _, names := range [][]string{m.rows, m.cols} {
		for _, n := range names {
			if strings.ContainsRune(n, '\r') {
				return fmt.Errorf("geo: matrix csv: name %s contains a carriage return", quoteField(n))
			}
		}
	}
	cw := csv.NewWriter(w)
	rec := make([]string, 0, len(m.cols)+1)
	rec = append(rec, "name")
	rec = append(rec, m.cols...)
	if err := cw.Write(rec); err != nil {
		return err
	}
	buf := make([]byte, 0, 24*(len(m.cols)+1))
	for i, name := range m.rows {
		rec = rec[:0]
		rec = append(rec, name)
		buf = buf[:0]
		offs := make([]int, 0, len(m.cols)+1)
		for j := range m.cols {
			offs = append(offs, len(buf))
			buf = strconv.AppendFloat(buf, m.At(i, j), 'g', -1, 64)
		}
		offs = append(offs, len(buf))
		s := string(buf)
		for j := range m.cols {
			rec = append(rec, s[offs[j]:offs[j+1]])
		}
		if len(rec) == 1 && rec[0] == "" {
			// encoding/csv writes a lone empty field as a blank line,
			// which readers skip: quote it by hand.
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			if _, err := io.WriteString(w, "\"\"\n"); err != nil {
				return err
			}
			continue
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadMatrixCSV reads the CSV written by WriteCSV: a header row whose first
// field is empty or "name" (any case) followed by the column names, then one
// row per row endpoint whose first field is its name and whose other fields
// are latencies in ms. The matrix may be rectangular. Errors name the line,
// the column and the offending field.
func ReadMatrixCSV(r io.Reader) (*Matrix, error) {
	const format = "matrix csv"
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	perr := func(line, col int, field string, err error) error {
		return &ParseError{Format: format, Line: line, Column: col, Field: field, Err: err}
	}
	header, err := cr.Read()
	if err == io.EOF {
		return nil, perr(0, 0, "", fmt.Errorf("%w: empty input, want a header row", ErrSyntax))
	}
	if err != nil {
		return nil, csvError(format, err)
	}
	if h := strings.ToLower(strings.TrimSpace(header[0])); h != "" && h != "name" {
		return nil, perr(1, 1, "header", fmt.Errorf("%w: first header field is %s, want \"name\" or empty", ErrSyntax, quoteField(header[0])))
	}
	cols := append([]string(nil), header[1:]...)
	if _, err := indexNames(cols, "column"); err != nil {
		return nil, perr(1, 0, "header", err)
	}
	var rows []string
	var flat []float64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(format, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols)+1 {
			return nil, perr(line, 0, "", fmt.Errorf("%w: %d fields, want %d (name and %d columns)", ErrShape, len(rec), len(cols)+1, len(cols)))
		}
		for j, f := range rec[1:] {
			v, err := parseLatency(f)
			if err != nil {
				return nil, perr(line, j+2, cols[j], err)
			}
			flat = append(flat, v)
		}
		rows = append(rows, rec[0])
	}
	m, err := newMatrixOwned(rows, cols, flat)
	if err != nil {
		return nil, &ParseError{Format: format, Err: err}
	}
	return m, nil
}

// csvError turns an encoding/csv error into a *ParseError.
func csvError(format string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{Format: format, Line: pe.Line, Column: pe.Column, Err: fmt.Errorf("%w: %v", ErrSyntax, pe.Err)}
	}
	return &ParseError{Format: format, Err: err}
}

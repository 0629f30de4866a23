package estimate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/overworld/overworld/geo"
)

// MaxFileRTT bounds the RTTs ReadTruth accepts (ms, about 11.6 days): far
// beyond any network's, and small enough that the estimators' sums of
// squares stay finite.
const MaxFileRTT = 1e9

// ReadTruth reads a matrix file: n lines of n RTTs in ms, separated by
// blanks or commas; blank lines and lines starting with # are skipped.
// Entries that are NaN, "-", negative or 0 off the diagonal are missing (as
// in NewTruth). The endpoints are named as geo.PlanetLabName names them. A
// field that is not a number, an RTT above MaxFileRTT, a ragged or
// non-square matrix and an empty input are errors naming the line and
// column.
func ReadTruth(r io.Reader) (*Truth, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var rows [][]float64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.FieldsFunc(text, func(c rune) bool { return c == ',' || c == ' ' || c == '\t' })
		row := make([]float64, len(fields))
		for j, s := range fields {
			if s == "-" || strings.EqualFold(s, "nan") {
				row[j] = math.NaN()
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d, column %d: %q is not a number", line, j+1, s)
			}
			if v > MaxFileRTT {
				return nil, fmt.Errorf("line %d, column %d: %s ms: want an RTT of at most %.0g ms (larger values overflow the estimators' sums and squares)", line, j+1, s, MaxFileRTT)
			}
			row[j] = v
		}
		if len(rows) > 0 && len(row) != len(rows[0]) {
			return nil, fmt.Errorf("line %d: %d entries, the first row has %d", line, len(row), len(rows[0]))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows")
	}
	if len(rows) != len(rows[0]) {
		return nil, fmt.Errorf("%d rows of %d entries: not square", len(rows), len(rows[0]))
	}
	names := make([]string, len(rows))
	for i := range names {
		names[i] = geo.PlanetLabName(i)
	}
	return NewTruth(names, rows)
}

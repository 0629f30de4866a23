package geo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax reports input that does not follow a loader's format. Loaders
// wrap it (or a more specific sentinel such as ErrInvalidLatency) in a
// *ParseError that says where the problem is.
var ErrSyntax = errors.New("geo: syntax error")

// ParseError locates a problem in a text input: the format being read, the
// 1-based line, the 1-based column (field) when known, the field's name when
// the format has named fields, and the underlying error (errors.Is sees
// through it to ErrSyntax, ErrInvalidLatency, ErrShape, ...).
type ParseError struct {
	Format string // "planetlab", "matrix csv", "geonames", "wondernetwork cities", "wondernetwork pings"
	Line   int    // 1-based; 0 when the problem is not on one line
	Column int    // 1-based field number; 0 when the problem is the whole line
	Field  string // field name, when the format names its fields
	Err    error
}

// Error formats the problem as "geo: <format>: line L, column C (field): what".
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("geo: ")
	b.WriteString(e.Format)
	if e.Line > 0 {
		b.WriteString(": line ")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Column > 0 {
		b.WriteString(", column ")
		b.WriteString(strconv.Itoa(e.Column))
	}
	if e.Field != "" {
		fmt.Fprintf(&b, " (%s)", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "geo: "))
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// quoteField shortens a field for an error message.
func quoteField(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}

// parseLatency parses one latency in ms: a finite, non-negative number.
func parseLatency(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not a number", ErrSyntax, quoteField(s))
	}
	if err := checkLatency(v); err != nil {
		return 0, err
	}
	return v, nil
}

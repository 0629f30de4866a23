package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// AlignTable lays out rows in columns two spaces apart: the first left
// columns aligned left, the others right. Widths count runes, so that
// "≤" and "×" take one column.
func AlignTable(rows [][]string, left int) string {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// WriteTrimmed writes text to w with the trailing blanks of every line
// removed (a tabwriter's padding, an empty last column).
func WriteTrimmed(w io.Writer, text []byte) error {
	lines := strings.SplitAfter(string(text), "\n")
	var out strings.Builder
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		out.WriteString(strings.TrimRight(l, " \n"))
		if nl {
			out.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// Fixed formats x with dec decimals.
func Fixed(x float64, dec int) string { return fmt.Sprintf("%.*f", dec, x) }

// Pct formats a fraction as a percentage with one decimal ("12.3%").
func Pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// Ints formats a list of integers as "1, 2, 3".
func Ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// Wrap breaks s at ", " so that lines stay within width, indenting
// continuation lines with indent.
func Wrap(s string, width int, indent string) string {
	var out strings.Builder
	n := 0
	for i, part := range strings.Split(s, ", ") {
		if i > 0 {
			if n+2+len(part) > width {
				out.WriteString(",\n" + indent)
				n = len(indent)
			} else {
				out.WriteString(", ")
				n += 2
			}
		}
		out.WriteString(part)
		n += len(part)
	}
	return out.String()
}

package docvec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeDoc writes text to a document in a temporary directory and
// returns its path.
func writeDoc(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "protocol.md")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRead(t *testing.T) {
	path := writeDoc(t, strings.Join([]string{
		"# Vectors",
		"",
		"```hex a/one",
		"01 02 03",
		"  0a0B ff  ",
		"```",
		"",
		"```go",
		"x := 1",
		"```",
		"",
		"```hex a/empty",
		"```",
		"",
		"```hex b/other",
		"zz",
		"```",
		"",
		"   ```hex a/indented   ",
		"   10 20",
		"   ```",
	}, "\n"))
	got, err := Read(path, "a/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"a/one":      {0x01, 0x02, 0x03, 0x0a, 0x0b, 0xff},
		"a/empty":    {},
		"a/indented": {0x10, 0x20},
	}
	if len(got) != len(want) {
		t.Errorf("Read = %x, want %x", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
			t.Errorf("vector %s = %x (present %v), want %x", name, g, ok, w)
		}
	}
}

func TestReadRejects(t *testing.T) {
	for _, tc := range []struct {
		name, text, err string
	}{
		{"duplicate", "```hex a/x\n01\n```\n```hex a/x\n01\n```\n", "vector a/x appears twice"},
		{"unclosed", "```hex a/x\n01\n```\n```hex b/y\n02\n", "vector b/y is not closed"},
		{"odd digits", "```hex a/x\n01 2\n```\n", "vector a/x: encoding/hex: odd length hex string"},
		{"not hex", "```hex a/x\n01 zz\n```\n", "vector a/x: encoding/hex: invalid byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeDoc(t, tc.text)
			got, err := Read(path, "a/")
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("Read = %x, %v; want an error naming %s and saying %q", got, err, path, tc.err)
			}
		})
	}
	if got, err := Read(filepath.Join(t.TempDir(), "missing.md"), "a/"); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file = %x, %v; want a not-exist error", got, err)
	}
}

// recorder is a testing.TB that keeps the messages of Errorf.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	long := make([]byte, 18)
	for i := range long {
		long[i] = byte(i)
	}
	doc := map[string][]byte{
		"a/same":  {1, 2},
		"a/diff":  {1, 2},
		"a/stale": {9},
	}
	made := map[string][]byte{
		"a/same": {1, 2},
		"a/diff": long,
		"a/new":  {0xab},
	}
	var r recorder
	Check(&r, "doc.md", doc, made)
	want := []string{
		"vector a/diff in doc.md differs from the encoder's output; the encoder gives:\n" +
			"00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n10 11\n",
		"vector a/new is missing from doc.md; it is:\nab\n",
		"doc.md has vector a/stale, which no test makes",
	}
	if !slices.Equal(r.errs, want) {
		t.Errorf("Check reported\n%q\nwant\n%q", r.errs, want)
	}

	r.errs = nil
	Check(&r, "doc.md", doc, doc)
	if len(r.errs) != 0 {
		t.Errorf("Check of equal sets reported %q", r.errs)
	}
}

func TestHexLines(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "00\n"},
		{16, "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n"},
		{17, "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n10\n"},
	} {
		b := make([]byte, tc.n)
		for i := range b {
			b[i] = byte(i)
		}
		if got := HexLines(b); got != tc.want {
			t.Errorf("HexLines(%d bytes) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

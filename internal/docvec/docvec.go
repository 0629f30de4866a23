// Package docvec reads the test vectors of the protocol specification,
// docs/protocol.md, and compares them with what the encoders make. A
// vector is a fenced block whose info string is "hex" and a name:
//
//	```hex player/ack
//	01 05 02
//	```
//
// The block holds bytes as hexadecimal pairs; spaces and line breaks
// between them are ignored. Names are unique, and the part before the
// first "/" names the package whose test makes the vector.
//
// Only tests use the package. The caller reads the vectors of its own
// prefix with Read (failing the test on an error), builds the same
// vectors with its encoders, and passes both to Check, which fails the
// test for a vector missing on either side or differing bytes.
package docvec

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Read returns the vectors of the document at path whose name starts
// with prefix, by name. It fails if the file cannot be read, if a vector
// of that prefix holds anything but hexadecimal pairs or appears twice,
// or if any vector is not closed.
func Read(path, prefix string) (map[string][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading test vectors: %w", err)
	}
	out := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	name, in := "", false
	var hx strings.Builder
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		switch {
		case !in && strings.HasPrefix(s, "```hex "):
			name, in = strings.TrimSpace(strings.TrimPrefix(s, "```hex ")), true
			hx.Reset()
		case in && s == "```":
			in = false
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			b, err := hex.DecodeString(hx.String())
			if err != nil {
				return nil, fmt.Errorf("%s: vector %s: %w", path, name, err)
			}
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("%s: vector %s appears twice", path, name)
			}
			out[name] = b
		case in:
			hx.WriteString(strings.Join(strings.Fields(s), ""))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if in {
		return nil, fmt.Errorf("%s: vector %s is not closed", path, name)
	}
	return out, nil
}

// Check compares the vectors the encoders made with the document's, both
// ways, and marks t failed for each vector missing from the document
// (printing it), each one in the document that made lacks, and each one
// whose bytes differ (printing the encoder's). docPath names the document
// in the messages.
func Check(t testing.TB, docPath string, doc, made map[string][]byte) {
	t.Helper()
	for _, name := range sortedNames(made) {
		b := made[name]
		d, ok := doc[name]
		switch {
		case !ok:
			t.Errorf("vector %s is missing from %s; it is:\n%s", name, docPath, HexLines(b))
		case !bytes.Equal(d, b):
			t.Errorf("vector %s in %s differs from the encoder's output; the encoder gives:\n%s", name, docPath, HexLines(b))
		}
	}
	for _, name := range sortedNames(doc) {
		if _, ok := made[name]; !ok {
			t.Errorf("%s has vector %s, which no test makes", docPath, name)
		}
	}
}

// HexLines formats b as the document writes vectors: 16 bytes a line,
// each as two lower-case hexadecimal digits, separated by spaces.
func HexLines(b []byte) string {
	var s strings.Builder
	for i := 0; i < len(b); i += 16 {
		for j := i; j < min(i+16, len(b)); j++ {
			if j > i {
				s.WriteByte(' ')
			}
			s.WriteString(hex.EncodeToString(b[j : j+1]))
		}
		s.WriteByte('\n')
	}
	return s.String()
}

// sortedNames returns the keys of m in order, so that failures print in
// the same order on every run.
func sortedNames(m map[string][]byte) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

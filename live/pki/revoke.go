package pki

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"

	"github.com/overworld/overworld/wire"
)

// Revocations is a revocation list: node certificates no longer accepted,
// by serial number, and nodes none of whose certificates is accepted. A
// nil *Revocations revokes nothing.
type Revocations struct {
	serials map[string]bool // big.Int.Text(16) of revoked serials
	nodes   map[wire.NodeID]bool
}

// Has reports whether leaf (naming node id) is revoked.
func (r *Revocations) Has(leaf *x509.Certificate, id wire.NodeID) bool {
	if r == nil {
		return false
	}
	return r.nodes[id] || leaf.SerialNumber != nil && r.serials[leaf.SerialNumber.Text(16)]
}

// Len returns the number of entries.
func (r *Revocations) Len() int {
	if r == nil {
		return 0
	}
	return len(r.serials) + len(r.nodes)
}

// MaxRevocations bounds a revocation list's entries.
const MaxRevocations = 100_000

// ParseRevocations reads a revocation list: one entry a line, "serial
// HEX" (a certificate's serial number, as openssl prints it, colons
// allowed) or "node ID" (every certificate of that node); blank lines and
// text after "#" are ignored. A malformed line is an error naming it.
func ParseRevocations(data []byte) (*Revocations, error) {
	r := &Revocations{serials: map[string]bool{}, nodes: map[wire.NodeID]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: revocation line %d: want \"serial HEX\" or \"node ID\"", ErrBadFile, line)
		}
		switch f[0] {
		case "serial":
			n, ok := new(big.Int).SetString(strings.ReplaceAll(f[1], ":", ""), 16)
			if !ok || n.Sign() <= 0 || n.BitLen() > 160 {
				return nil, fmt.Errorf("%w: revocation line %d: serial %q is not a positive hex number of at most 20 bytes", ErrBadFile, line, f[1])
			}
			r.serials[n.Text(16)] = true
		case "node":
			v, err := strconv.ParseUint(f[1], 10, 16)
			if err != nil || v == 0 {
				return nil, fmt.Errorf("%w: revocation line %d: node %q is not a node ID (1 to 65535)", ErrBadFile, line, f[1])
			}
			r.nodes[wire.NodeID(v)] = true
		default:
			return nil, fmt.Errorf("%w: revocation line %d: %q: want serial or node", ErrBadFile, line, f[0])
		}
		if r.Len() > MaxRevocations {
			return nil, fmt.Errorf("%w: more than %d revocations", ErrBadFile, MaxRevocations)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: revocation list: %v", ErrBadFile, err)
	}
	return r, nil
}

// LoadRevocations reads a revocation list file (ParseRevocations).
func LoadRevocations(path string) (*Revocations, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseRevocations(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// RevokesNode reports whether every certificate of node id is revoked.
func (r *Revocations) RevokesNode(id wire.NodeID) bool { return r != nil && r.nodes[id] }

package world

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// ErrCorrupt reports a delta or write that does not decode against its
// schema. Decoders return it wrapped with the reason and leave their
// destination unchanged.
var ErrCorrupt = errors.New("world: corrupt delta")

// Changed reports whether cur differs from base (nil base: from the zero
// state) in any field.
func Changed(base, cur *State) bool {
	if base == nil {
		for _, v := range cur.v {
			if v != 0 {
				return true
			}
		}
		return false
	}
	return !slices.Equal(cur.v, base.v[:len(cur.v)]) // stops at the first difference
}

func changeMask(base, cur *State) uint64 {
	var mask uint64
	for i, v := range cur.v {
		var b int64
		if base != nil {
			b = base.v[i]
		}
		if v != b {
			mask |= 1 << uint(i)
		}
	}
	return mask
}

func zigzag(d int64) uint64   { return uint64(d<<1) ^ uint64(d>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// AppendDelta appends to b the field-wise delta that turns base into cur and
// returns the extended buffer. A nil base means the zero state, so
// AppendDelta(b, nil, cur) is a full state. The encoding is the change mask
// (uvarint, bit i = field i changed) followed, for each changed field in
// order, by the zig-zag varint of the difference of the quantised values.
// base and cur must share a schema. It does not allocate when b has room.
func AppendDelta(b []byte, base, cur *State) []byte {
	mask := changeMask(base, cur)
	b = binary.AppendUvarint(b, mask)
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		d := cur.v[i]
		if base != nil {
			d -= base.v[i]
		}
		b = binary.AppendUvarint(b, zigzag(d))
	}
	return b
}

// decodeFields reads a change mask and up to n varints from p into vals.
// signed selects zig-zag decoding by field index (a bit mask).
func decodeFields(p []byte, s *Schema, signed uint64, vals *[MaxFields]int64) (mask uint64, n int, err error) {
	mask, k := binary.Uvarint(p)
	if k <= 0 {
		return 0, 0, fmt.Errorf("%w: bad change mask", ErrCorrupt)
	}
	n = k
	nf := len(s.fields)
	if nf < 64 && mask>>uint(nf) != 0 {
		return 0, 0, fmt.Errorf("%w: change mask %#x names fields beyond the %d of schema %q", ErrCorrupt, mask, nf, s.name)
	}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		var u uint64
		if n < len(p) && p[n] < 0x80 {
			// Most deltas are small: a one-byte varint.
			u = uint64(p[n])
			n++
		} else {
			u, k = binary.Uvarint(p[n:])
			if k <= 0 {
				return 0, 0, fmt.Errorf("%w: field %q truncated", ErrCorrupt, s.fields[i].Name)
			}
			n += k
		}
		if signed>>uint(i)&1 != 0 {
			vals[i] = unzigzag(u)
		} else {
			vals[i] = int64(u)
		}
	}
	return mask, n, nil
}

// ApplyDelta decodes one delta from the front of p, written by AppendDelta
// against base, and stores base + delta in dst; it returns the number of
// bytes read. A nil base means the zero state of dst's schema. dst may be
// base. On error dst is unchanged.
func ApplyDelta(dst, base *State, p []byte) (int, error) {
	s := dst.schema
	if base != nil && base.schema != s {
		return 0, fmt.Errorf("world: delta base is a %q, destination a %q", base.schema.name, s.name)
	}
	var vals [MaxFields]int64
	mask, n, err := decodeDelta(s, base, p, &vals)
	if err != nil {
		return 0, err
	}
	if base == nil {
		dst.Reset()
	} else if base != dst {
		dst.CopyFrom(base)
	}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		dst.v[i] = vals[i]
	}
	return n, nil
}

// CheckDelta reports what ApplyDelta(dst, base, p) would for a dst of
// schema s (the bytes read, or the error), without a destination: a
// receiver validates a delta against the state it will apply it to, and
// then applies it, reading and writing that state alone. A nil base means
// the zero state of s.
func CheckDelta(s *Schema, base *State, p []byte) (int, error) {
	if base != nil && base.schema != s {
		return 0, fmt.Errorf("world: delta base is a %q, destination a %q", base.schema.name, s.name)
	}
	var vals [MaxFields]int64
	_, n, err := decodeDelta(s, base, p, &vals)
	return n, err
}

// decodeDelta decodes a delta of schema s from the front of p into vals:
// the changed fields' values, base's added; it returns the change mask and
// the bytes read.
func decodeDelta(s *Schema, base *State, p []byte, vals *[MaxFields]int64) (uint64, int, error) {
	mask, n, err := decodeFields(p, s, ^uint64(0), vals)
	if err != nil {
		return 0, 0, err
	}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		var b int64
		if base != nil {
			b = base.v[i]
		}
		vals[i] += b
		if s.bools>>uint(i)&1 != 0 && vals[i]&^1 != 0 {
			return 0, 0, fmt.Errorf("%w: bool field %q decodes to %d", ErrCorrupt, s.fields[i].Name, vals[i])
		}
	}
	return mask, n, nil
}

// numeric reports whether a tentative write adds (Float, Int) rather than
// sets (Bool, Ref) a field.
func numeric(t FieldType) bool { return t == Float || t == Int }

// AppendWrite appends a tentative write: the changes a think function made
// to a replica, from before to after (same schema), to be applied to the
// primary by ApplyWrite. Numeric fields carry their difference, so two
// writers' changes (two hits) add up; Bool and Ref fields carry their new
// value (last writer wins).
func AppendWrite(b []byte, before, after *State) []byte {
	mask := changeMask(before, after)
	b = binary.AppendUvarint(b, mask)
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if numeric(after.schema.fields[i].Type) {
			b = binary.AppendUvarint(b, zigzag(after.v[i]-before.v[i]))
		} else {
			b = binary.AppendUvarint(b, uint64(after.v[i]))
		}
	}
	return b
}

// ApplyWrite decodes one tentative write from the front of p and applies it
// to dst (normally the primary's current state); it returns the bytes read.
// On error dst is unchanged.
func ApplyWrite(dst *State, p []byte) (int, error) {
	s := dst.schema
	var vals [MaxFields]int64
	mask, n, err := decodeFields(p, s, s.numeric, &vals)
	if err != nil {
		return 0, err
	}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if s.fields[i].Type == Bool && vals[i]&^1 != 0 {
			return 0, fmt.Errorf("%w: bool field %q written as %d", ErrCorrupt, s.fields[i].Name, vals[i])
		}
	}
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if numeric(s.fields[i].Type) {
			dst.v[i] += vals[i]
		} else {
			dst.v[i] = vals[i]
		}
	}
	return n, nil
}

package locate

import (
	"bytes"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// matchBodies returns the bodies of two match frames of the same length
// that tell of different objects at different places.
func matchBodies(t *testing.T) (a, b []byte) {
	t.Helper()
	body := func(id world.ObjectID, x float64) []byte {
		m := wire.Pubs{TTL: time.Second, Dims: 2, Pubs: []wire.Pub{{ID: id, Node: 4, Loc: world.Point{x, 20}}}}
		fr, err := wire.OpenFrames(wire.AppendPubs(wire.AppendHeader(nil), wire.TypeMatch, &m))
		if err != nil {
			t.Fatal(err)
		}
		typ, body, ok := fr.Next()
		if !ok || typ != wire.TypeMatch {
			t.Fatalf("frame %v, %v", typ, ok)
		}
		return body
	}
	a, b = body(world.MakeObjectID(4, 1), 10), body(world.MakeObjectID(4, 2), 30)
	if len(a) != len(b) || bytes.Equal(a, b) {
		t.Fatalf("bodies of %d and %d bytes, equal %v: want different bodies of one length", len(a), len(b), bytes.Equal(a, b))
	}
	return a, b
}

// stepFound steps body (with StepChecked if checked) at a subscriber and
// returns the IDs of what it found.
func stepFound(t *testing.T, d *Directory, body []byte, checked bool) []world.ObjectID {
	t.Helper()
	out := Out{Outbox: &wire.Outbox{}}
	step := d.Step
	if checked {
		step = d.StepChecked
	}
	if err := step(time.Second, 1, wire.TypeMatch, body, &out); err != nil {
		t.Fatal(err)
	}
	var ids []world.ObjectID
	for _, f := range out.Found {
		ids = append(ids, f.ID)
	}
	return ids
}

// TestDirectoryStepDecodesEachBody: Step decodes the body it is given,
// even one of the same length, in the same memory, as the frame Check
// decoded last; StepChecked acts on what Check decoded without decoding
// again, unless a Step since decoded another frame over it.
func TestDirectoryStepDecodesEachBody(t *testing.T) {
	a, b := matchBodies(t)
	newSub := func() *Directory {
		d, err := NewDirectory(3, DefaultDirectoryConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := func(name string, got []world.ObjectID, id world.ObjectID) {
		t.Helper()
		if len(got) != 1 || got[0] != id {
			t.Errorf("%s: found %v, want %v", name, got, id)
		}
	}
	idA, idB := world.MakeObjectID(4, 1), world.MakeObjectID(4, 2)

	// A receive buffer reused for the next frame: same address, same
	// length, other bytes.
	d := newSub()
	buf := bytes.Clone(a)
	if err := d.Check(wire.TypeMatch, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, b)
	want("Step of another body in Check's memory", stepFound(t, d, buf, false), idB)

	// Another body of the same length elsewhere.
	d = newSub()
	if err := d.Check(wire.TypeMatch, a); err != nil {
		t.Fatal(err)
	}
	want("Step of another body after Check", stepFound(t, d, b, false), idB)

	// StepChecked uses Check's decoding: the bytes are not read again
	// (here they were overwritten since).
	d = newSub()
	buf = bytes.Clone(a)
	if err := d.Check(wire.TypeMatch, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, b)
	want("StepChecked", stepFound(t, d, buf, true), idA)

	// A Step in between decodes over Check's decoding: StepChecked
	// decodes its body again.
	d = newSub()
	if err := d.Check(wire.TypeMatch, a); err != nil {
		t.Fatal(err)
	}
	want("Step between Check and StepChecked", stepFound(t, d, b, false), idB)
	want("StepChecked after a Step", stepFound(t, d, a, true), idA)

	// StepChecked without a Check, or a second time, decodes.
	want("StepChecked without Check", stepFound(t, newSub(), b, true), idB)
	want("StepChecked twice", stepFound(t, d, b, true), idB)
}

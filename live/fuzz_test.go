package live

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/overworld/overworld/wire"
)

// FuzzDatagram: parseDatagram never panics, rejects a datagram whole or
// accepts all of it, and what it accepts re-encodes to the same bytes.
func FuzzDatagram(f *testing.F) {
	var two []byte
	two = appendRecord(two, wire.Packet{Class: wire.ClassUpdate, Payload: []byte{wire.Version, 3, 1}})
	two = appendRecord(two, wire.Packet{Class: wire.ClassUpdate, Payload: make([]byte, 200)})
	f.Add(two)
	f.Add([]byte{})
	f.Add([]byte{byte(wire.NumClasses), 1, 1})
	f.Add([]byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, d []byte) {
		ps, err := parseDatagram(nil, d, 1, 2)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || len(ps) != 0 {
				t.Fatalf("error %v (wraps ErrMalformed: %v) with %d packets", err, errors.Is(err, ErrMalformed), len(ps))
			}
			return
		}
		var enc []byte
		for _, p := range ps {
			if p.From != 1 || p.To != 2 || !p.Class.Valid() || len(p.Payload) == 0 {
				t.Fatalf("bad packet %+v", p)
			}
			enc = appendRecord(enc, p)
		}
		if !bytes.Equal(enc, d) {
			t.Fatalf("%x re-encodes to %x", d, enc)
		}
	})
}

// FuzzStreamFrames: reading frames from arbitrary stream bytes never
// panics, never allocates beyond MaxFrame per frame, and every frame read
// re-encodes to the bytes it came from.
func FuzzStreamFrames(f *testing.F) {
	var seed []byte
	seed = appendFrame(seed, wire.Packet{Class: wire.ClassControl, Payload: []byte{wire.Version, 9}})
	seed = appendFrame(seed, wire.Packet{Class: wire.ClassMaintenance, Payload: make([]byte, 300)})
	f.Add(seed)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0})
	f.Add([]byte{0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		var hdr [4]byte
		off := 0
		for {
			p, err := readFrame(r, &hdr, 5, 6)
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			enc := appendFrame(nil, p)
			if !bytes.Equal(enc, b[off:off+len(enc)]) {
				t.Fatalf("frame at %d does not round-trip", off)
			}
			off += len(enc)
		}
	})
}

// FuzzDaemonConfig: any file either parses to a configuration that
// validates again unchanged, or is rejected with ErrConfig; never a panic.
func FuzzDaemonConfig(f *testing.F) {
	f.Add([]byte(DefaultConfigTOML))
	f.Add([]byte("id = 2\n[[peers]]\nid = 1\naddr = \"127.0.0.1:1\"\ncity = \"Tokyo\"\n"))
	f.Add([]byte("frame_rate = 1e400\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseDaemonConfig(b, "/base")
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		if _, err := c.Validate(); err != nil {
			t.Fatalf("a parsed configuration does not validate again: %v", err)
		}
	})
}

// FuzzInstanceRecords: any body of POST /admin/instances is refused with
// an error or decoded into records that pass the checks again and
// survive a JSON round trip unchanged; never a panic.
func FuzzInstanceRecords(f *testing.F) {
	f.Add([]byte(`[{"id":"a","node":1,"box":[0,0,10,10],"players":[{"id":"p0"},{"id":"p1","host":101,"admin":"http://127.0.0.1:1"}],"left":["p0"],"stamp":5}]`))
	f.Add([]byte(`[{"id":"h","node":101,"box":[0,0,1,1],"players":[{"id":"p0","host":101},{"id":"p1","host":102}],"rtt_ms":[0,3,3,0],"replica":"p1"}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[{"id":"","node":0,"box":[1,0,0,1],"players":[]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := ParseInstanceRecords(b)
		if err != nil {
			return
		}
		if err := CheckInstanceRecords(rs); err != nil {
			t.Fatalf("accepted %q, which does not check again: %v", b, err)
		}
		again, err := json.Marshal(rs)
		if err != nil {
			t.Fatalf("accepted %q, which does not encode: %v", b, err)
		}
		rs2, err := ParseInstanceRecords(again)
		if err != nil {
			t.Fatalf("accepted %q; its encoding %s is refused: %v", b, again, err)
		}
		if third, _ := json.Marshal(rs2); !bytes.Equal(third, again) {
			t.Fatalf("accepted %q; its encoding %s encodes again as %s", b, again, third)
		}
	})
}

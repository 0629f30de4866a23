package wire

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// The authority messages (authority.go) join the generic codec table, so
// TestRoundTrip, TestEncodeDoesNotAllocate, FuzzPayload and the per-type
// fuzz targets below cover them like the others.
func init() {
	codecs = append(codecs,
		codec{TypeMigrate, func(r *rand.Rand) any { return randMigrate(r) },
			func(b []byte, m any) []byte { return AppendMigrate(b, m.(*Migrate)) },
			func(p []byte) (any, error) { m := &Migrate{}; return m, m.Decode(p) }},
		codec{TypeWhere, func(r *rand.Rand) any { return randWhere(r) },
			func(b []byte, m any) []byte { return AppendWhere(b, m.(*Where)) },
			func(p []byte) (any, error) { m := &Where{}; return m, m.Decode(p) }},
		codec{TypeBackup, func(r *rand.Rand) any { return randBackup(r) },
			func(b []byte, m any) []byte { return AppendBackup(b, m.(*Backup)) },
			func(p []byte) (any, error) { m := &Backup{}; return m, m.Decode(p) }},
		codec{TypeBackupAck, func(r *rand.Rand) any { return randBackupAcks(r) },
			func(b []byte, m any) []byte { return AppendBackupAcks(b, m.(*BackupAcks)) },
			func(p []byte) (any, error) { m := &BackupAcks{}; return m, m.Decode(p) }},
		codec{TypeWriteAcks, func(r *rand.Rand) any { return randWriteAcks(r) },
			func(b []byte, m any) []byte { return AppendWriteAcks(b, m.(*WriteAcks)) },
			func(p []byte) (any, error) { m := &WriteAcks{}; return m, m.Decode(p) }},
		codec{TypeHeartbeat, func(r *rand.Rand) any { return randHeartbeat(r) },
			func(b []byte, m any) []byte { return AppendHeartbeat(b, m.(*Heartbeat)) },
			func(p []byte) (any, error) { m := &Heartbeat{}; return m, m.Decode(p) }},
	)
	codecs = append(codecs, codec{TypeClaim, func(r *rand.Rand) any { return randClaims(r) },
		func(b []byte, m any) []byte { return AppendClaims(b, m.(*Claims)) },
		func(p []byte) (any, error) { m := &Claims{}; return m, m.Decode(p) }})
	for _, t := range []Type{TypeMigrateAck, TypeRelease} {
		codecs = append(codecs, codec{t, func(r *rand.Rand) any { return randEpochs(r) },
			func(b []byte, m any) []byte { return AppendEpochs(b, t, m.(*Epochs)) },
			func(p []byte) (any, error) { m := &Epochs{}; return m, m.Decode(p) }})
	}
	for _, t := range []Type{TypeProbe, TypeProbeReply} {
		codecs = append(codecs, codec{t, func(r *rand.Rand) any { return randProbe(r) },
			func(b []byte, m any) []byte { return AppendProbe(b, t, m.(*Probe)) },
			func(p []byte) (any, error) { m := &Probe{}; return m, m.Decode(p) }})
	}
}

// randNode returns a random node ID, often small, sometimes 32 bits wide.
func randNode(r *rand.Rand) NodeID { return NodeID(r.Uint32() >> r.IntN(33)) }

// randInc returns a random incarnation (16 bits).
func randInc(r *rand.Rand) uint16 { return uint16(r.Uint32() >> r.IntN(17)) }

// randEpoch returns a random epoch: 0, small, or up to 32 bits.
func randEpoch(r *rand.Rand) uint32 {
	switch r.IntN(4) {
	case 0:
		return r.Uint32N(3)
	case 1:
		return math.MaxUint32 - r.Uint32N(2)
	}
	return r.Uint32() >> r.IntN(32)
}

// randVersion returns a random object version >= 1.
func randVersion(r *rand.Rand) uint64 {
	if r.IntN(3) == 0 {
		return 1 + r.Uint64N(math.MaxUint64)
	}
	return 1 + r.Uint64N(1000)
}

func randKind(r *rand.Rand) world.Kind { return world.Kind(1 + r.IntN(math.MaxUint16)) }

// randWriterSeqs returns a random writer table (nil when empty, as it
// decodes).
func randWriterSeqs(r *rand.Rand) []WriterSeq {
	var ws []WriterSeq
	for range r.IntN(3) * r.IntN(4) {
		ws = append(ws, WriterSeq{Node: randNode(r), Inc: randInc(r), Seq: r.Uint32() >> r.IntN(33)})
	}
	return ws
}

func randMigrate(r *rand.Rand) *Migrate {
	m := &Migrate{}
	for range randN(r) / 2 {
		e := Migration{ID: randID(r), Kind: randKind(r), Epoch: max(1, randEpoch(r)), Version: randVersion(r),
			Controller: randNode(r), Data: randBytes(r), Writers: randWriterSeqs(r)}
		for range r.IntN(3) * r.IntN(4) {
			e.Holders = append(e.Holders, HolderAt{Node: randNode(r), Version: r.Uint64() >> r.IntN(65)})
		}
		m.Entries = append(m.Entries, e)
	}
	return m
}

func randEpochs(r *rand.Rand) *Epochs {
	m := &Epochs{}
	for range randN(r) {
		m.Entries = append(m.Entries, Epoch{ID: randID(r), Epoch: randEpoch(r)})
	}
	return m
}

func randWhere(r *rand.Rand) *Where {
	m := &Where{}
	for range randN(r) {
		l := Location{ID: randID(r), Epoch: randEpoch(r), Node: randNode(r), Gone: r.IntN(4) == 0}
		m.Entries = append(m.Entries, l)
	}
	return m
}

func randBackupState(r *rand.Rand) BackupState {
	e := BackupState{ID: randID(r), Epoch: randEpoch(r), Version: randVersion(r), Controller: randNode(r),
		Data: randBytes(r), Writers: randWriterSeqs(r), HasHolders: r.IntN(3) == 0}
	if r.IntN(3) == 0 {
		e.Kind = randKind(r) // a full state
	} else {
		e.Base = 1 + r.Uint64N(e.Version) // 1 to Version
		if r.IntN(3) == 0 {
			e.Base = e.Version - r.Uint64N(min(e.Version, 2))
		}
	}
	if e.HasHolders {
		for range r.IntN(3) * r.IntN(4) {
			e.Holders = append(e.Holders, randNode(r))
		}
	}
	if r.IntN(4) == 0 {
		e.Fence = max(1, randNode(r))
	}
	return e
}

func randClaims(r *rand.Rand) *Claims {
	m := &Claims{}
	for range randN(r) {
		m.Entries = append(m.Entries, Claim{ID: randID(r), Epoch: randEpoch(r), Version: randVersion(r),
			Answer: ClaimAnswer(r.IntN(int(numClaimAnswers)))})
	}
	return m
}

func randBackup(r *rand.Rand) *Backup {
	m := &Backup{}
	for range randN(r) / 2 {
		m.Entries = append(m.Entries, randBackupState(r))
	}
	return m
}

func randBackupAcks(r *rand.Rand) *BackupAcks {
	m := &BackupAcks{}
	for range randN(r) {
		m.Entries = append(m.Entries, BackupAck{ID: randID(r), Epoch: randEpoch(r), Version: r.Uint64() >> (1 + r.IntN(64)), Resync: r.IntN(2) == 0})
	}
	return m
}

func randWriteAcks(r *rand.Rand) *WriteAcks {
	m := &WriteAcks{Inc: randInc(r)}
	for range randN(r) {
		m.Entries = append(m.Entries, WriteAck{ID: randID(r), Seq: r.Uint32() >> r.IntN(33)})
	}
	return m
}

func randHeartbeat(r *rand.Rand) *Heartbeat {
	m := &Heartbeat{Inc: randInc(r), Uptime: time.Duration(r.Int64N(int64(48 * time.Hour))).Truncate(time.Second)}
	if r.IntN(8) == 0 {
		m.Uptime = time.Duration(math.MaxInt64).Truncate(time.Second) // the longest a duration holds
	}
	return m
}

func randProbe(r *rand.Rand) *Probe {
	m := &Probe{}
	for range randN(r) {
		m.Entries = append(m.Entries, Liveness{Node: randNode(r), Alive: r.IntN(2) == 0, Ago: time.Duration(r.IntN(5000)) * time.Millisecond})
	}
	return m
}

func FuzzMigrate(f *testing.F)    { fuzzType(f, TypeMigrate) }
func FuzzMigrateAck(f *testing.F) { fuzzType(f, TypeMigrateAck) }
func FuzzRelease(f *testing.F)    { fuzzType(f, TypeRelease) }
func FuzzWhere(f *testing.F)      { fuzzType(f, TypeWhere) }
func FuzzBackup(f *testing.F)     { fuzzType(f, TypeBackup) }
func FuzzBackupAck(f *testing.F)  { fuzzType(f, TypeBackupAck) }
func FuzzWriteAcks(f *testing.F)  { fuzzType(f, TypeWriteAcks) }
func FuzzHeartbeat(f *testing.F)  { fuzzType(f, TypeHeartbeat) }
func FuzzProbe(f *testing.F)      { fuzzType(f, TypeProbe) }
func FuzzProbeReply(f *testing.F) { fuzzType(f, TypeProbeReply) }
func FuzzClaim(f *testing.F)      { fuzzType(f, TypeClaim) }

// authorityTypes are the frame types of authority.go and the Writes frame
// whose format changed with them.
var authorityTypes = []Type{TypeWrites, TypeMigrate, TypeMigrateAck, TypeWhere, TypeBackup, TypeBackupAck,
	TypeWriteAcks, TypeHeartbeat, TypeProbe, TypeProbeReply, TypeRelease, TypeClaim}

// TestAuthorityCodecs: every authority type is in the codec table (so
// the generic round trip and fuzz checks cover it), and is accounted
// under the class its comment in codec.go gives.
func TestAuthorityCodecs(t *testing.T) {
	for _, typ := range authorityTypes {
		codecOf(typ) // panics if missing
	}
	for typ := Type(1); typ < numTypes; typ++ {
		found := false
		for _, c := range codecs {
			found = found || c.typ == typ
		}
		if !found {
			t.Errorf("type %v has no codec in the tests' table", typ)
		}
	}
	for _, typ := range []Type{TypeMigrate, TypeWhere} {
		if typ.Class() != ClassUpdate {
			t.Errorf("%v is accounted as %v, want update (it must not be overtaken by updates)", typ, typ.Class())
		}
	}
	for _, typ := range []Type{TypeMigrateAck, TypeBackup, TypeBackupAck, TypeHeartbeat,
		TypeProbe, TypeProbeReply, TypeRelease, TypeClaim} {
		if typ.Class() != ClassControl {
			t.Errorf("%v is accounted as %v, want control", typ, typ.Class())
		}
	}
	for _, typ := range []Type{TypeWrites, TypeWriteAcks} {
		if typ.Class() != ClassUpdate {
			t.Errorf("%v is accounted as %v, want update (with the writes it acknowledges)", typ, typ.Class())
		}
	}
}

// TestAuthorityTruncated: a body cut short anywhere but at the end of its
// header or of an entry fails with ErrMalformed; cut at the end of the
// header it decodes to no entries. Every message of one entry is cut at
// every length.
func TestAuthorityTruncated(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 60
	}
	for _, typ := range authorityTypes {
		c := codecOf(typ)
		for seed := range uint64(n) {
			r := rand.New(rand.NewPCG(seed, 77))
			m := c.gen(r)
			header := -1 // the length of the body without entries, or -1 for a fixed body
			switch m := m.(type) {
			case *Writes:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = len(bodyOf(AppendWrites(nil, &Writes{Writer: m.Writer, Inc: m.Inc, Hops: m.Hops})))
			case *Migrate:
				for len(m.Entries) == 0 {
					m.Entries = randMigrate(r).Entries
				}
				m.Entries = m.Entries[:1]
				header = 0
			case *Backup:
				m.Entries = []BackupState{randBackupState(r)}
				header = 0
			case *Epochs:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = 0
			case *Where:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = 0
			case *BackupAcks:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = 0
			case *Claims:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = 0
			case *WriteAcks:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = len(bodyOf(AppendWriteAcks(nil, &WriteAcks{Inc: m.Inc})))
			case *Probe:
				m.Entries = m.Entries[:min(len(m.Entries), 1)]
				header = 0
			case *Heartbeat:
			default:
				t.Fatalf("%v: no truncation rule for %T", typ, m)
			}
			body := bodyOf(c.encode(nil, m))
			for cut := range len(body) {
				got, err := c.decode(body[:cut])
				switch {
				case cut == header || cut == 0 && header == 0:
					if err != nil {
						t.Fatalf("%v seed %d: the header alone (%x) fails: %v", typ, seed, body[:cut], err)
					}
					checkArbitrary(t, c, body[:cut])
				case err == nil:
					t.Fatalf("%v seed %d: %d of %d bytes (%x) decoded to %#v", typ, seed, cut, len(body), body[:cut], got)
				case !errors.Is(err, ErrMalformed):
					t.Fatalf("%v seed %d: %d of %d bytes: error %v does not wrap ErrMalformed", typ, seed, cut, len(body), err)
				}
			}
		}
	}
}

// bodyOf returns the body of the one frame in b.
func bodyOf(b []byte) []byte {
	fr := Frames{p: b}
	_, body, ok := fr.Next()
	if !ok {
		panic(fr.Err())
	}
	return body
}

// TestAuthorityMutations: valid bodies with random bytes changed, cut,
// inserted or appended never make a decoder panic, fail only with
// ErrMalformed, and decode, when they do, to a message that round-trips.
func TestAuthorityMutations(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, typ := range authorityTypes {
		c := codecOf(typ)
		for seed := range uint64(n) {
			r := rand.New(rand.NewPCG(seed, 78))
			body := append([]byte(nil), bodyOf(c.encode(nil, c.gen(r)))...)
			for range 1 + r.IntN(3) {
				i := 0
				if len(body) > 0 {
					i = r.IntN(len(body))
				}
				switch r.IntN(5) {
				case 0:
					if len(body) > 0 {
						body[i] = byte(r.Uint32())
					}
				case 1:
					if len(body) > 0 {
						body[i] ^= 0x80 // a varint's continuation bit
					}
				case 2:
					body = body[:i]
				case 3:
					body = append(body[:i], append([]byte{byte(r.Uint32())}, body[i:]...)...)
				case 4:
					body = append(body, 0xff, 0xff, 0xff, 0xff, 0xff)[:len(body)+r.IntN(6)]
				}
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%v seed %d: decoding %x panics: %v", typ, seed, body, p)
					}
				}()
				checkArbitrary(t, c, body)
			}()
		}
	}
}

func TestAuthorityDecodeRejects(t *testing.T) {
	overlong := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00} // 11 bytes
	big32 := []byte{0x80, 0x80, 0x80, 0x80, 0x10}                                        // 2^32
	big16 := []byte{0x80, 0x80, 0x04}                                                    // 2^16
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	b := func(v ...byte) []byte { return v }
	// A valid migration of 1.5: kind 1, epoch 1, version 1, controller 0,
	// no data, writers and holders as given.
	mig := func(writers, holders []byte) []byte { return cat(b(1, 5, 1, 1, 1, 0, 0), writers, holders) }
	// A valid backup entry of 1.5 at epoch 1, version 3, after the base
	// distance part, controller 0, no data, no writers, holders as given.
	bk := func(base, holders []byte) []byte { return cat(b(1, 5, 1, 3), base, b(0, 0, 0), holders) }
	cases := []struct {
		name string
		typ  Type
		body []byte
		want string // in the error
	}{
		// The valid bodies the cases below change, which must decode.
		{"writes valid", TypeWrites, b(1, 2, 0, 1, 5, 3, 2, 0), ""},
		{"migrate valid", TypeMigrate, mig(b(1, 7, 2, 3), b(1, 4, 9)), ""},
		{"backup valid", TypeBackup, bk(b(0, 1), b(4, 4)), ""},
		{"backup fence valid", TypeBackup, bk(b(0, 1), b(5, 9, 4)), ""},
		{"claim valid", TypeClaim, b(1, 5, 3, 2, 1), ""},
		{"backup delta valid", TypeBackup, bk(b(3), b(0)), ""},
		{"where valid", TypeWhere, b(1, 5, 3, 4), ""},
		{"epochs valid", TypeRelease, b(1, 5, 3), ""},
		{"backup ack valid", TypeBackupAck, b(1, 5, 3, 0), ""},
		{"write acks valid", TypeWriteAcks, b(2, 1, 5, 9), ""},
		{"write acks header only", TypeWriteAcks, b(2), ""},
		{"heartbeat valid", TypeHeartbeat, b(2, 60), ""},
		{"heartbeat longest uptime", TypeHeartbeat, cat(b(2), []byte{0x84, 0xfa, 0x85, 0xae, 0x22}), ""}, // 9223372036 s
		{"probe valid", TypeProbeReply, b(9, 0x90, 0x03), ""},
		{"probe last heard truncated", TypeProbeReply, b(9), "last heard truncated"},

		{"writes empty", TypeWrites, nil, "writer truncated"},
		{"writes header truncated", TypeWrites, b(1, 2), "hops truncated"},
		{"writes writer beyond 32 bits", TypeWrites, cat(big32, b(2, 0)), "exceeds 32 bits"},
		{"writes writer overlong", TypeWrites, cat(overlong, b(2, 0)), "overlong"},
		{"writes incarnation beyond 16 bits", TypeWrites, cat(b(1), big16, b(0)), "exceeds 16 bits"},
		{"writes hops beyond MaxHops", TypeWrites, b(1, 2, MaxHops+1), "forwarded 5 times"},
		{"writes hops 255", TypeWrites, b(1, 2, 0xff), "forwarded 255 times"},
		{"writes sequence 0", TypeWrites, b(1, 2, 0, 1, 5, 0, 0, 0), "sequence 0"},
		{"writes sequence beyond 32 bits", TypeWrites, cat(b(1, 2, 0, 1, 5), big32, b(0, 0)), "exceeds 32 bits"},
		{"writes previous distance equal to sequence", TypeWrites, b(1, 2, 0, 1, 5, 3, 3, 0), "previous write"},
		{"writes previous distance beyond sequence", TypeWrites, b(1, 2, 0, 1, 5, 3, 0x80, 0x01, 0), "previous write"},
		{"writes previous distance overlong", TypeWrites, cat(b(1, 2, 0, 1, 5, 3), overlong, b(0)), "overlong"},
		{"writes data truncated", TypeWrites, b(1, 2, 0, 1, 5, 3, 2, 5, 1), "write data truncated"},
		{"writes entry truncated", TypeWrites, b(1, 2, 0, 1, 5, 3), "truncated"},

		{"migrate epoch 0", TypeMigrate, b(1, 5, 1, 0, 1, 0, 0, 0, 0), "epoch 0"},
		{"migrate version 0", TypeMigrate, b(1, 5, 1, 1, 0, 0, 0, 0, 0), "version 0"},
		{"migrate kind 0", TypeMigrate, b(1, 5, 0, 1, 1, 0, 0, 0, 0), "kind 0"},
		{"migrate kind beyond 16 bits", TypeMigrate, cat(b(1, 5), big16, b(1, 1, 0, 0, 0, 0)), "kind 65536"},
		{"migrate epoch beyond 32 bits", TypeMigrate, cat(b(1, 5, 1), big32, b(1, 0, 0, 0, 0)), "exceeds 32 bits"},
		{"migrate controller beyond 32 bits", TypeMigrate, cat(b(1, 5, 1, 1, 1), big32, b(0, 0, 0)), "exceeds 32 bits"},
		{"migrate state truncated", TypeMigrate, b(1, 5, 1, 1, 1, 0, 4, 1, 2), "migrated state truncated"},
		{"migrate writer incarnation beyond 16 bits", TypeMigrate, mig(cat(b(1, 7), big16, b(3)), b(0)), "exceeds 16 bits"},
		{"migrate writer count beyond the bytes left", TypeMigrate, mig(b(9, 7, 2, 3), b(0)), "writer count 9 exceeds"},
		{"migrate writer sequence beyond 32 bits", TypeMigrate, mig(cat(b(1, 7, 2), big32), b(0)), "exceeds 32 bits"},
		{"migrate holder count beyond the bytes left", TypeMigrate, mig(b(0), b(5, 4, 9)), "holder count 5 exceeds the 2 bytes left"},
		{"migrate holder count overlong", TypeMigrate, mig(b(0), overlong), "holder count truncated or overlong"},
		{"migrate holder truncated", TypeMigrate, mig(b(0), b(1, 4)), "holder version truncated"},
		{"migrate holders missing", TypeMigrate, mig(b(0), nil), "holder count truncated"},

		{"backup version 0", TypeBackup, b(1, 5, 1, 0, 0, 1, 0, 0, 0, 0), "version 0"},
		{"backup base distance beyond version", TypeBackup, bk(b(5), b(0)), "base distance 5 from version 3"},
		{"backup base distance one beyond", TypeBackup, bk(b(4), b(0)), "base distance 4 from version 3"},
		{"backup full state kind 0", TypeBackup, bk(b(0, 0), b(0)), "kind 0"},
		{"backup epoch beyond 32 bits", TypeBackup, cat(b(1, 5), big32, b(3, 1, 0, 0, 0, 0)), "exceeds 32 bits"},
		{"backup holder count beyond the bytes left", TypeBackup, bk(b(1), b(8, 7, 8)), "holder count 3 exceeds the 2 bytes left"},
		{"backup holder count overlong", TypeBackup, bk(b(1), overlong), "overlong"},
		{"backup holder beyond 32 bits", TypeBackup, bk(b(1), cat(b(4), big32)), "exceeds 32 bits"},
		{"backup fence node 0", TypeBackup, bk(b(1), b(1, 0)), "fence node 0"},
		{"backup fence missing", TypeBackup, bk(b(1), b(1)), "fence truncated"},
		// A huge holder count whose fence is missing: refused at once, not
		// after counting 2⁶² absent holders.
		{"backup fence missing under a huge holder count", TypeBackup, bk(b(1), b(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)), "fence truncated"},
		{"backup fence beyond 32 bits", TypeBackup, bk(b(1), cat(b(1), big32)), "exceeds 32 bits"},
		{"backup writer incarnation beyond 16 bits", TypeBackup, cat(b(1, 5, 1, 3, 1, 0, 0, 1, 7), big16, b(3, 0)), "exceeds 16 bits"},
		{"backup data truncated", TypeBackup, b(1, 5, 1, 3, 1, 0, 9, 1), "backup data truncated"},

		{"where epoch beyond 32 bits", TypeWhere, cat(b(1, 5), []byte{0x80, 0x80, 0x80, 0x80, 0x20}, b(4)), "epoch 4294967296 exceeds 32 bits"},
		{"where node beyond 32 bits", TypeWhere, cat(b(1, 5, 3), big32), "exceeds 32 bits"},
		{"where node missing", TypeWhere, b(1, 5, 3), "node truncated"},
		{"where epoch overlong", TypeWhere, cat(b(1, 5), overlong, b(4)), "overlong"},

		{"epochs epoch missing", TypeMigrateAck, b(1, 5), "epoch truncated"},
		{"epochs epoch beyond 32 bits", TypeRelease, cat(b(1, 5), big32), "exceeds 32 bits"},
		{"epochs origin beyond 32 bits", TypeRelease, cat(big32, b(5, 1)), "exceeds 32 bits"},

		{"claim version 0", TypeClaim, b(1, 5, 3, 0, 1), "version 0"},
		{"claim answer 3", TypeClaim, b(1, 5, 3, 2, 3), "answer 3"},
		{"claim answer missing", TypeClaim, b(1, 5, 3, 2), "answer truncated"},
		{"claim epoch beyond 32 bits", TypeClaim, cat(b(1, 5), big32, b(2, 0)), "exceeds 32 bits"},

		{"backup ack version missing", TypeBackupAck, b(1, 5, 3), "version truncated"},
		{"backup ack epoch beyond 32 bits", TypeBackupAck, cat(b(1, 5), big32, b(0)), "exceeds 32 bits"},
		{"backup ack version overlong", TypeBackupAck, cat(b(1, 5, 3), overlong), "overlong"},

		{"write acks empty", TypeWriteAcks, nil, "writer incarnation truncated"},
		{"write acks incarnation beyond 16 bits", TypeWriteAcks, big16, "exceeds 16 bits"},
		{"write acks sequence missing", TypeWriteAcks, b(2, 1, 5), "write sequence truncated"},
		{"write acks sequence beyond 32 bits", TypeWriteAcks, cat(b(2, 1, 5), big32), "exceeds 32 bits"},

		{"heartbeat empty", TypeHeartbeat, nil, "incarnation truncated"},
		{"heartbeat uptime missing", TypeHeartbeat, b(2), "uptime truncated"},
		{"heartbeat incarnation beyond 16 bits", TypeHeartbeat, cat(big16, b(1)), "exceeds 16 bits"},
		{"heartbeat uptime overflows", TypeHeartbeat, cat(b(2), []byte{0x85, 0xfa, 0x85, 0xae, 0x22}), "overflows a duration"}, // 9223372037 s
		{"heartbeat byte after", TypeHeartbeat, b(2, 60, 0), "1 bytes after a heartbeat"},
		{"heartbeat bytes after", TypeHeartbeat, b(2, 60, 1, 2, 3), "3 bytes after a heartbeat"},
		{"heartbeat uptime overlong", TypeHeartbeat, cat(b(2), overlong), "overlong"},

		{"probe node beyond 32 bits", TypeProbe, []byte{0x80, 0x80, 0x80, 0x80, 0x20}, "probed node 4294967296 exceeds 32 bits"},
		{"probe node truncated", TypeProbeReply, b(9, 0, 0x80), "probed node truncated"},
		{"probe node overlong", TypeProbe, overlong, "overlong"},
	}
	for _, tc := range cases {
		_, err := codecOf(tc.typ).decode(tc.body)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %x fails: %v", tc.name, tc.body, err)
		case tc.want == "":
		case !errors.Is(err, ErrMalformed):
			t.Errorf("%s: %x gives %v, want ErrMalformed", tc.name, tc.body, err)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %x gives %q, want it to say %q", tc.name, tc.body, err, tc.want)
		}
	}
}

// TestBackupStream: a Backup frame streamed entry by entry (BeginBackup,
// AppendBackupEntry, EndBackup) is byte for byte the frame AppendBackup
// makes, whatever its length.
func TestBackupStream(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 79))
		m := &Backup{}
		for range r.IntN(4) * r.IntN(40) {
			m.Entries = append(m.Entries, randBackupState(r))
		}
		pre := randBytes(r)
		want := AppendBackup(append([]byte(nil), pre...), m)
		b, mark := BeginBackup(append([]byte(nil), pre...))
		for i := range m.Entries {
			b = AppendBackupEntry(b, &m.Entries[i])
		}
		if got := EndBackup(b, mark); string(got) != string(want) {
			t.Fatalf("seed %d: streamed %d entries to\n%x\nwant\n%x", seed, len(m.Entries), got, want)
		}
		if err := roundTrip(codecOf(TypeBackup), m); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestWritesPrevDistance: a write's Prev travels as its distance back
// from Seq, so a write naming the one just before it takes one byte for
// it however large the sequence numbers, and no previous write takes one
// byte too.
func TestWritesPrevDistance(t *testing.T) {
	size := func(w Write) int { return len(AppendWrites(nil, &Writes{Writer: 1, Entries: []Write{w}})) }
	base := size(Write{ID: 1, Seq: math.MaxUint32, Data: []byte{}})
	for _, prev := range []uint32{math.MaxUint32 - 1, math.MaxUint32 - 100} {
		if d := size(Write{ID: 1, Seq: math.MaxUint32, Prev: prev, Data: []byte{}}) - base; d != 0 {
			t.Errorf("previous write %d back takes %d bytes more than none", math.MaxUint32-prev, d)
		}
	}
	var m Writes
	if err := m.Decode(bodyOf(AppendWrites(nil, &Writes{Writer: 3, Inc: 1, Hops: MaxHops,
		Entries: []Write{{ID: 9, Seq: math.MaxUint32, Prev: 1, Data: []byte{}}, {ID: 9, Seq: 2, Prev: 1, Data: []byte{}}}}))); err != nil ||
		m.Entries[0].Prev != 1 || m.Entries[1].Prev != 1 || m.Hops != MaxHops {
		t.Errorf("decoded %+v, %v", m, err)
	}
}

// TestHeartbeatUptime: uptime travels in whole seconds, rounded down, and
// a negative one as zero.
func TestHeartbeatUptime(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, 0}, {999 * time.Millisecond, 0}, {1999 * time.Millisecond, time.Second}, {-time.Hour, 0},
		{math.MaxInt64, time.Duration(math.MaxInt64).Truncate(time.Second)},
	} {
		var m Heartbeat
		if err := m.Decode(bodyOf(AppendHeartbeat(nil, &Heartbeat{Inc: 7, Uptime: tc.in}))); err != nil || m.Uptime != tc.want || m.Inc != 7 {
			t.Errorf("uptime %v: decoded %+v, %v; want %v", tc.in, m, err, tc.want)
		}
	}
}

// TestReaderEmptiesOnError: after a decoding error the reader holds no
// bytes, so later reads of the same body read nothing (the invariant the
// one-byte fast path of uvarint relies on).
func TestReaderEmptiesOnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		read func(*reader)
		body []byte
	}{
		{"kind 0", func(r *reader) { r.kind() }, []byte{0, 5, 5, 5}},
		{"kind beyond 16 bits", func(r *reader) { r.kind() }, []byte{0x80, 0x80, 0x04, 5, 5}},
		{"writer incarnation", func(r *reader) { r.writers(nil) }, []byte{2, 1, 0x80, 0x80, 0x04, 3, 1, 1, 1, 5, 5, 5}},
		{"count", func(r *reader) { r.count("count") }, []byte{9, 1}},
		{"u32", func(r *reader) { r.u32("u32") }, []byte{0x80, 0x80, 0x80, 0x80, 0x10, 1}},
	} {
		r := reader{p: tc.body}
		tc.read(&r)
		if r.err == nil || len(r.p) != 0 {
			t.Errorf("%s: error %v, %d bytes left", tc.name, r.err, len(r.p))
		}
		if v := r.uvarint("next"); v != 0 {
			t.Errorf("%s: a read after the error gave %d", tc.name, v)
		}
	}
}

package wire_test

import (
	"bytes"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/docvec"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// protocolDoc is the byte-level specification whose test vectors this
// file checks: every "```hex wire/..." block in it must equal what the
// encoders produce here, and every vector made here must be in it.
var protocolDoc = filepath.Join("..", "docs", "protocol.md")

// The example game of the specification: a two-dimensional space and one
// kind of object (kind 1).
var (
	exSpace = world.MustSpace("x", "y")
	exDot   = world.MustSchema("dot", exSpace, []world.Field{
		{Name: "x", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "y", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "hp", Type: world.Int},
		{Name: "alive", Type: world.Bool},
	}, func(st *world.State) world.Object { return nil })
)

func exState(id world.ObjectID, x, y float64, hp int64, alive bool) *world.State {
	st := exDot.NewState(id)
	st.SetFloat(exDot.MustField("x"), x)
	st.SetFloat(exDot.MustField("y"), y)
	st.SetInt(exDot.MustField("hp"), hp)
	st.SetBool(exDot.MustField("alive"), alive)
	return st
}

// payload returns a whole payload: the version byte, then the frames
// each append function writes.
func payload(frames ...func([]byte) []byte) []byte {
	b := wire.AppendHeader(nil)
	for _, f := range frames {
		b = f(b)
	}
	return b
}

// TestProtocolVectors checks the node protocol's test vectors in the
// specification against the encoders, and decodes each with the decoders.
func TestProtocolVectors(t *testing.T) {
	a, b, c := world.MakeObjectID(1, 5), world.MakeObjectID(1, 6), world.MakeObjectID(2, 3)
	full := world.AppendDelta(nil, nil, exState(a, 10.5, -3, 100, true))
	delta := world.AppendDelta(nil, exState(b, 4, 4, 100, true), exState(b, 4.5, 4, 75, true))
	write := world.AppendWrite(nil, exState(c, 0, 0, 100, true), exState(c, 0, 0, 70, true))
	updates := wire.Updates{Time: 70123 * time.Millisecond, Entries: []wire.Update{
		{ID: a, Kind: 1, Version: 1, Data: full},
		{ID: b, Version: 7, Base: 6, Data: delta},
		{ID: c, Version: 4, Base: 4, Data: []byte{0}},
	}}
	acks := wire.Acks{Entries: []wire.Ack{{ID: b, Version: 5}}}
	// Node 4 (incarnation 1) writes to 2.3 twice: write 7, then write 9,
	// made before 7 was acknowledged (write 8 went to another object).
	dead := world.AppendWrite(nil, exState(c, 0, 0, 70, true), exState(c, 0, 0, 70, false))
	writes := wire.Writes{Writer: 4, Inc: 1, Entries: []wire.Write{{ID: c, Seq: 7, Data: write}, {ID: c, Seq: 9, Prev: 7, Data: dead}}}
	register := wire.IDs{IDs: []world.ObjectID{a, b}}
	dormant := wire.IDs{IDs: []world.ObjectID{b}}
	handoffs := wire.Handoffs{Entries: []wire.Handoff{{ID: world.MakeObjectID(3, 1), Kind: 1, Data: full}}}
	g := wire.Grid{Frac: 4}
	publish := wire.Pubs{TTL: 1500 * time.Millisecond, Dims: 2, Grid: g, Pubs: []wire.Pub{
		{ID: a, Node: 1, Loc: world.Point{10.5, -3}, At: 70123 * time.Millisecond, Vel: world.Point{4, 0}},
		{ID: c, Node: 4, Loc: world.Point{12.25, 0}, At: 70100 * time.Millisecond, Skip: []wire.NodeID{1, 7}},
	}}
	subscribe := wire.Subscribe{TTL: 1500 * time.Millisecond, Dims: 2, Grid: g, Boxes: []world.Box{
		{Min: world.Point{-10, -20}, Max: world.Point{30, 20}},
		{Min: world.Point{100, math.Inf(-1)}, Max: world.Point{140, math.Inf(1)}},
	}}

	// Authority: node 1 hands 1.5 to node 2 at epoch 1; node 2 backs it
	// and 1.6 up on node 7, and 2.3 is deleted; node 1 checks on node 2
	// through a witness.
	migrate := wire.Migrate{Entries: []wire.Migration{{ID: a, Kind: 1, Epoch: 1, Version: 12, Controller: 1, Data: full,
		Writers: []wire.WriterSeq{{Node: 4, Inc: 1, Seq: 9}}, Holders: []wire.HolderAt{{Node: 7, Version: 11}, {Node: 4, Version: 12}}}}}
	migrateAck := wire.Epochs{Entries: []wire.Epoch{{ID: a, Epoch: 1}}}
	where := wire.Where{Entries: []wire.Location{{ID: a, Epoch: 1, Node: 2}, {ID: c, Gone: true}}}
	backup := wire.Backup{Entries: []wire.BackupState{
		{ID: a, Kind: 1, Epoch: 1, Version: 13, Controller: 1, Data: full, Writers: []wire.WriterSeq{{Node: 4, Inc: 1, Seq: 9}},
			HasHolders: true, Holders: []wire.NodeID{4, 1}},
		{ID: b, Epoch: 3, Version: 7, Base: 6, Controller: 1, Data: delta, Fence: 4},
	}}
	backupAck := wire.BackupAcks{Entries: []wire.BackupAck{{ID: a, Epoch: 1, Version: 13}, {ID: b, Epoch: 3, Version: 0, Resync: true}}}
	writeAcks := wire.WriteAcks{Inc: 1, Entries: []wire.WriteAck{{ID: c, Seq: 9}}}
	heartbeat := wire.Heartbeat{Inc: 1, Uptime: time.Hour}
	probe := wire.Probe{Entries: []wire.Liveness{{Node: 2}}}
	probeReply := wire.Probe{Entries: []wire.Liveness{{Node: 2, Alive: false, Ago: 1500 * time.Millisecond}, {Node: 7, Alive: true, Ago: 20 * time.Millisecond}}}
	release := wire.Epochs{Entries: []wire.Epoch{{ID: c, Epoch: 2}}}
	claim := wire.Claims{Entries: []wire.Claim{{ID: b, Epoch: 3, Version: 7}}}
	grant := wire.Claims{Entries: []wire.Claim{{ID: b, Epoch: 3, Version: 7, Answer: wire.ClaimGranted}}}

	made := map[string][]byte{
		"wire/updates":     payload(func(p []byte) []byte { return wire.AppendUpdates(p, &updates) }),
		"wire/acks":        payload(func(p []byte) []byte { return wire.AppendAcks(p, &acks) }),
		"wire/writes":      payload(func(p []byte) []byte { return wire.AppendWrites(p, &writes) }),
		"wire/register":    payload(func(p []byte) []byte { return wire.AppendIDs(p, wire.TypeRegister, &register) }),
		"wire/handoff":     payload(func(p []byte) []byte { return wire.AppendHandoffs(p, &handoffs) }),
		"wire/publish":     payload(func(p []byte) []byte { return wire.AppendPubs(p, wire.TypePublish, &publish) }),
		"wire/subscribe":   payload(func(p []byte) []byte { return wire.AppendSubscribe(p, &subscribe) }),
		"wire/migrate":     payload(func(p []byte) []byte { return wire.AppendMigrate(p, &migrate) }),
		"wire/migrate-ack": payload(func(p []byte) []byte { return wire.AppendEpochs(p, wire.TypeMigrateAck, &migrateAck) }),
		"wire/where":       payload(func(p []byte) []byte { return wire.AppendWhere(p, &where) }),
		"wire/backup":      payload(func(p []byte) []byte { return wire.AppendBackup(p, &backup) }),
		"wire/backup-ack":  payload(func(p []byte) []byte { return wire.AppendBackupAcks(p, &backupAck) }),
		"wire/write-acks":  payload(func(p []byte) []byte { return wire.AppendWriteAcks(p, &writeAcks) }),
		"wire/heartbeat":   payload(func(p []byte) []byte { return wire.AppendHeartbeat(p, &heartbeat) }),
		"wire/probe":       payload(func(p []byte) []byte { return wire.AppendProbe(p, wire.TypeProbe, &probe) }),
		"wire/probe-reply": payload(func(p []byte) []byte { return wire.AppendProbe(p, wire.TypeProbeReply, &probeReply) }),
		"wire/release":     payload(func(p []byte) []byte { return wire.AppendEpochs(p, wire.TypeRelease, &release) }),
		"wire/claim":       payload(func(p []byte) []byte { return wire.AppendClaims(p, &claim) }),
		"wire/claim-grant": payload(func(p []byte) []byte { return wire.AppendClaims(p, &grant) }),
		"wire/two-frames": payload(
			func(p []byte) []byte { return wire.AppendIDs(p, wire.TypeDormant, &dormant) },
			func(p []byte) []byte { return wire.AppendAcks(p, &acks) }),
	}
	doc, err := docvec.Read(protocolDoc, "wire/")
	if err != nil {
		t.Fatal(err)
	}
	docvec.Check(t, protocolDoc, doc, made)
	if t.Failed() {
		return
	}

	// Each document vector opens as a payload of the expected frames and
	// decodes to the message it was made from.
	frames := func(name string, want ...wire.Type) [][]byte {
		t.Helper()
		fr, err := wire.OpenFrames(doc[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var bodies [][]byte
		for _, w := range want {
			typ, body, ok := fr.Next()
			if !ok || typ != w {
				t.Fatalf("%s: frame %v (%v), want %v", name, typ, fr.Err(), w)
			}
			bodies = append(bodies, body)
		}
		if _, _, ok := fr.Next(); ok || fr.Err() != nil {
			t.Fatalf("%s: more than %d frames, or %v", name, len(want), fr.Err())
		}
		return bodies
	}
	var u wire.Updates
	if err := u.Decode(frames("wire/updates", wire.TypeUpdates)[0]); err != nil ||
		u.Time != (70123%65536)*time.Millisecond || len(u.Entries) != 3 ||
		u.Entries[0].Kind != 1 || u.Entries[0].Base != 0 || !bytes.Equal(u.Entries[0].Data, full) ||
		u.Entries[1].Base != 6 || u.Entries[1].Version != 7 || !bytes.Equal(u.Entries[1].Data, delta) ||
		u.Entries[2].Base != 4 || u.Entries[2].Version != 4 {
		t.Errorf("updates: %+v, %v", u, err)
	}
	if got := wire.UnwrapTime(70*time.Second, u.Time); got != 70123*time.Millisecond {
		t.Errorf("updates: time unwraps to %v at 70 s, want 70.123 s", got)
	}
	var ac wire.Acks
	if err := ac.Decode(frames("wire/acks", wire.TypeAcks)[0]); err != nil || !slices.Equal(ac.Entries, acks.Entries) {
		t.Errorf("acks: %+v, %v", ac, err)
	}
	var wr wire.Writes
	if err := wr.Decode(frames("wire/writes", wire.TypeWrites)[0]); err != nil || !reflect.DeepEqual(wr, writes) {
		t.Errorf("writes: %+v, %v", wr, err)
	}
	var ids wire.IDs
	if err := ids.Decode(frames("wire/register", wire.TypeRegister)[0]); err != nil || !slices.Equal(ids.IDs, register.IDs) {
		t.Errorf("register: %+v, %v", ids, err)
	}
	var ho wire.Handoffs
	if err := ho.Decode(frames("wire/handoff", wire.TypeHandoff)[0]); err != nil || len(ho.Entries) != 1 || ho.Entries[0].Kind != 1 {
		t.Errorf("handoff: %+v, %v", ho, err)
	}
	var pu wire.Pubs
	if err := pu.Decode(frames("wire/publish", wire.TypePublish)[0]); err != nil || pu.TTL != publish.TTL || pu.Dims != 2 ||
		pu.Grid != g || len(pu.Pubs) != 2 || pu.Pubs[0].Node != 1 || pu.Pubs[0].Loc != publish.Pubs[0].Loc ||
		pu.Pubs[0].Vel != publish.Pubs[0].Vel || pu.Pubs[1].Node != 4 || !slices.Equal(pu.Pubs[1].Skip, []wire.NodeID{1, 7}) ||
		pu.Pubs[1].At != 70100*time.Millisecond {
		t.Errorf("publish: %+v, %v", pu, err)
	}
	var su wire.Subscribe
	if err := su.Decode(frames("wire/subscribe", wire.TypeSubscribe)[0]); err != nil || len(su.Boxes) != 2 ||
		su.Boxes[0] != subscribe.Boxes[0] || su.Boxes[1] != subscribe.Boxes[1] {
		t.Errorf("subscribe: %+v, %v", su, err)
	}
	decoded := []struct {
		name string
		typ  wire.Type
		dst  interface{ Decode([]byte) error }
		want any
	}{
		{"wire/migrate", wire.TypeMigrate, &wire.Migrate{}, &migrate},
		{"wire/migrate-ack", wire.TypeMigrateAck, &wire.Epochs{}, &migrateAck},
		{"wire/where", wire.TypeWhere, &wire.Where{}, &where},
		{"wire/backup", wire.TypeBackup, &wire.Backup{}, &backup},
		{"wire/backup-ack", wire.TypeBackupAck, &wire.BackupAcks{}, &backupAck},
		{"wire/write-acks", wire.TypeWriteAcks, &wire.WriteAcks{}, &writeAcks},
		{"wire/heartbeat", wire.TypeHeartbeat, &wire.Heartbeat{}, &heartbeat},
		{"wire/probe", wire.TypeProbe, &wire.Probe{}, &probe},
		{"wire/probe-reply", wire.TypeProbeReply, &wire.Probe{}, &probeReply},
		{"wire/release", wire.TypeRelease, &wire.Epochs{}, &release},
		{"wire/claim", wire.TypeClaim, &wire.Claims{}, &claim},
		{"wire/claim-grant", wire.TypeClaim, &wire.Claims{}, &grant},
	}
	for _, d := range decoded {
		if err := d.dst.Decode(frames(d.name, d.typ)[0]); err != nil || !reflect.DeepEqual(d.dst, d.want) {
			t.Errorf("%s: decoded %+v, %v; want %+v", d.name, d.dst, err, d.want)
		}
	}
	two := frames("wire/two-frames", wire.TypeDormant, wire.TypeAcks)
	if err := ids.Decode(two[0]); err != nil || !slices.Equal(ids.IDs, dormant.IDs) {
		t.Errorf("two frames: dormant %+v, %v", ids, err)
	}
}

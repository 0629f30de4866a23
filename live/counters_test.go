package live

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestInSizes: a receiver splits a packet of several classes by class as
// its sender did (wire.Packet.ClassSizes), for random mixes of update and
// control frames packed by an outbox.
func TestInSizes(t *testing.T) {
	mixed := 0
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		var o wire.Outbox
		for range 1 + r.IntN(40) {
			b := o.Buf()
			switch r.IntN(3) {
			case 0:
				var m wire.Acks
				for range 1 + r.IntN(20) {
					m.Entries = append(m.Entries, wire.Ack{ID: world.ObjectID(1 + r.Uint64N(1<<40)), Version: 1 + r.Uint64N(1<<20)})
				}
				o.Commit(2, wire.ClassUpdate, wire.AppendAcks(b, &m))
			case 1:
				o.Commit(2, wire.ClassControl, wire.AppendHeartbeat(b, &wire.Heartbeat{Inc: uint16(r.IntN(9)), Uptime: time.Duration(r.Int64N(int64(time.Hour)))}))
			default:
				var m wire.IDs
				for range 1 + r.IntN(10) {
					m.IDs = append(m.IDs, world.ObjectID(1+r.Uint64N(1<<40)))
				}
				o.Commit(2, wire.TypeDrop.Class(), wire.AppendIDs(b, wire.TypeDrop, &m))
			}
		}
		for _, p := range o.Packets(1, nil) {
			if p.Parts != nil {
				mixed++
			}
			want := p.ClassSizes(0)
			got := inSizes(p)
			for c := range want {
				if uint64(got[c]) != want[c] {
					t.Fatalf("seed %d: received split %v, sent %v (parts %v)", seed, got, want, p.Parts)
				}
			}
		}
	}
	if mixed == 0 {
		t.Fatal("no packet of several classes was packed")
	}
}

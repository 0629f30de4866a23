package sim

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/wire"
)

// Counts is a number of messages and their bytes (payload plus the
// configured header overhead).
type Counts struct {
	Msgs  uint64 `json:"msgs"`
	Bytes uint64 `json:"bytes"`
}

func (c *Counts) add(size uint64) { c.Msgs++; c.Bytes += size }

// Plus returns c + d.
func (c Counts) Plus(d Counts) Counts { return Counts{c.Msgs + d.Msgs, c.Bytes + d.Bytes} }

// DropCause says why the network dropped a packet.
type DropCause uint8

// Drop causes. The numbering is part of metrics files; append only.
const (
	DropLoss      DropCause = iota // random loss (Config.Loss)
	DropPartition                  // an active partition separates the ends
	DropDown                       // the destination crashed or left (at send or in flight)
	DropUnknown                    // the destination was never added
	NumDropCauses = 4
)

var dropNames = [NumDropCauses]string{"loss", "partition", "down", "unknown"}

func (c DropCause) String() string {
	if int(c) < NumDropCauses {
		return dropNames[c]
	}
	return fmt.Sprintf("DropCause(%d)", uint8(c))
}

// secRow is the whole network's traffic in one second of virtual time.
type secRow struct {
	out  [wire.NumClasses]Counts
	in   Counts
	dup  Counts
	drop [NumDropCauses]Counts
}

// traffic is the network-wide accounting. Per-node accounting lives in node.
type traffic struct {
	out      [wire.NumClasses]Counts // sent by up nodes with a valid From and Class
	in       Counts                  // delivered
	dup      Counts                  // extra copies made by duplication
	drops    [NumDropCauses]Counts
	inflight Counts // scheduled for delivery, not yet delivered or dropped
	rejected Counts // packets a core emitted with a wrong From or an invalid Class
	firstBad string // the first rejected packet, described
	secs     []secRow
	lo       int // a worker lane's: the first row changed since its last merge
}

func (t *traffic) row(now int64) *secRow { return t.rowSec(int(now / int64(time.Second))) }

func (t *traffic) rowSec(sec int) *secRow {
	for len(t.secs) <= sec {
		t.secs = append(t.secs, secRow{})
	}
	t.lo = min(t.lo, sec)
	return &t.secs[sec]
}

func (t *traffic) sent(now int64, c wire.Class, size uint64) {
	t.out[c].add(size)
	t.row(now).out[c].add(size)
}

// sentParts counts a packet of several classes: bytes per class, the
// message under its header's class c.
func (t *traffic) sentParts(now int64, c wire.Class, sizes *[wire.NumClasses]uint64) {
	r := t.row(now)
	for k, b := range sizes {
		t.out[k].Bytes += b
		r.out[k].Bytes += b
	}
	t.out[c].Msgs++
	r.out[c].Msgs++
}

func (t *traffic) received(now int64, size uint64) {
	t.in.add(size)
	t.row(now).in.add(size)
}

func (t *traffic) duplicated(now int64, size uint64) {
	t.dup.add(size)
	t.row(now).dup.add(size)
}

func (t *traffic) dropped(c DropCause, now int64, size uint64) {
	t.drops[c].add(size)
	t.row(now).drop[c].add(size)
}

func (t *traffic) reject(from wire.NodeID, p wire.Packet) {
	t.rejected.add(uint64(len(p.Payload)))
	if t.firstBad == "" {
		t.firstBad = fmt.Sprintf("node %d emitted a packet with From %d, To %d, Class %d (want From %d and a valid class)", from, p.From, p.To, p.Class, from)
	}
}

// Totals is the network-wide traffic so far. Conservation holds at every
// instant: Sent + Duplicated = Delivered + Dropped + InFlight, in messages
// and in bytes.
type Totals struct {
	Sent       Counts                  // all classes
	ByClass    [wire.NumClasses]Counts // sent, by class
	Delivered  Counts
	Duplicated Counts
	Dropped    [NumDropCauses]Counts
	InFlight   Counts
	// Rejected counts packets a core emitted with a From other than its own
	// node or an invalid Class: an adapter bug. They are not sent and not
	// part of the other counts (Bytes here is the payload only).
	Rejected Counts
	// FirstRejected describes the first rejected packet ("" if none).
	FirstRejected string
}

// DroppedTotal sums the drops of every cause.
func (t Totals) DroppedTotal() Counts {
	var c Counts
	for _, d := range t.Dropped {
		c = c.Plus(d)
	}
	return c
}

// Totals returns the network-wide traffic so far.
func (s *Sim) Totals() Totals {
	t := Totals{ByClass: s.tr.out, Delivered: s.tr.in, Duplicated: s.tr.dup, Dropped: s.tr.drops,
		InFlight: s.tr.inflight, Rejected: s.tr.rejected, FirstRejected: s.tr.firstBad}
	for _, c := range s.tr.out {
		t.Sent = t.Sent.Plus(c)
	}
	return t
}

// NodeTraffic is one node's traffic so far, by class.
type NodeTraffic struct {
	In, Out [wire.NumClasses]Counts
}

// TotalIn sums In over the classes.
func (t NodeTraffic) TotalIn() Counts { return sum(t.In) }

// TotalOut sums Out over the classes.
func (t NodeTraffic) TotalOut() Counts { return sum(t.Out) }

func sum(cs [wire.NumClasses]Counts) Counts {
	var c Counts
	for _, x := range cs {
		c = c.Plus(x)
	}
	return c
}

// Traffic returns a node's traffic so far.
func (s *Sim) Traffic(id wire.NodeID) (NodeTraffic, error) {
	i, err := s.node(id)
	if err != nil {
		return NodeTraffic{}, err
	}
	return NodeTraffic{In: s.nodes[i].in, Out: s.nodes[i].out}, nil
}

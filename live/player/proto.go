package player

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/world"
)

// Version is the client protocol version: the first byte of every message.
// Version 2 added avatar deeds (the Deed message, and the deed a
// Rejoin carries); a node answers a version-1 client's first message with
// a version-1 Error telling it to upgrade (see Gateway).
const Version = 2

// MsgType is a client protocol message type: the second byte of every
// message.
type MsgType uint8

// Message types (see the package comment for their bodies).
const (
	MsgJoin     MsgType = iota + 1 // client → node: token
	MsgJoinOK                      // node → client: player, avatar, schema table
	MsgInput                       // client → node: seq, game input
	MsgState                       // node → client: one frame of interest-filtered state
	MsgAck                         // client → node: newest frame applied
	MsgLeave                       // client → node: leaving
	MsgError                       // node → client: why the node refuses or ends the session
	MsgRedirect                    // node → client: your avatar moved; join that node
	MsgRejoin                      // client → node: token, avatar deed, the avatar handed here, input seq
	MsgDeed                        // node → client: the avatar deed a Rejoin presents
	numMsgTypes
)

var msgNames = [...]string{MsgJoin: "join", MsgJoinOK: "joinok", MsgInput: "input", MsgState: "state",
	MsgAck: "ack", MsgLeave: "leave", MsgError: "error", MsgRedirect: "redirect", MsgRejoin: "rejoin", MsgDeed: "deed"}

// String names the type.
func (t MsgType) String() string {
	if t > 0 && t < numMsgTypes {
		return msgNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Limits of the protocol.
const (
	// MaxInput is the largest game input a client may send.
	MaxInput = 256
	// MaxClientMessage bounds every message a client sends (a node
	// refuses larger ones before decoding).
	MaxClientMessage = 2560
	// MaxMessage bounds every message a node sends (a client refuses
	// larger ones).
	MaxMessage = 4 << 20
	// MaxHistory bounds Config.History (and what a client accepts).
	MaxHistory = 1024
	maxName    = 64
	maxText    = 256
)

// ErrMalformed wraps every decoding error.
var ErrMalformed = errors.New("player: malformed message")

func malformed(t MsgType, format string, args ...any) error {
	return fmt.Errorf("%w (%v): %s", ErrMalformed, t, fmt.Sprintf(format, args...))
}

// Open checks a message's version and type and returns its type and body.
func Open(msg []byte) (MsgType, []byte, error) {
	if len(msg) < 2 {
		return 0, nil, fmt.Errorf("%w: %d bytes, want at least a 2-byte header", ErrMalformed, len(msg))
	}
	if msg[0] != Version {
		return 0, nil, fmt.Errorf("%w: protocol version %d, want %d", ErrMalformed, msg[0], Version)
	}
	t := MsgType(msg[1])
	if t == 0 || t >= numMsgTypes {
		return 0, nil, fmt.Errorf("%w: unknown message type %d", ErrMalformed, msg[1])
	}
	return t, msg[2:], nil
}

func header(b []byte, t MsgType) []byte { return append(b, Version, byte(t)) }

// reader decodes a message body.
type reader struct {
	t   MsgType
	p   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = malformed(r.t, format, args...)
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.p)
	if n <= 0 || (n > 1 && r.p[n-1] == 0) {
		r.fail("%s: bad or non-minimal varint", what)
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) bytes(what string, max int) []byte {
	n := r.uvarint(what + " length")
	if r.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(r.p)) {
		r.fail("%s: length %d (limit %d, %d bytes left)", what, n, max, len(r.p))
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *reader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.p) == 0 {
		r.fail("%s: truncated", what)
		return 0
	}
	b := r.p[0]
	r.p = r.p[1:]
	return b
}

func (r *reader) done() error {
	if r.err == nil && len(r.p) != 0 {
		r.fail("%d trailing bytes", len(r.p))
	}
	return r.err
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendJoin appends a Join message carrying token.
func AppendJoin(b, token []byte) []byte { return appendBytes(header(b, MsgJoin), token) }

// DecodeJoin decodes a Join body: the token (not yet verified).
func DecodeJoin(body []byte) ([]byte, error) {
	r := reader{t: MsgJoin, p: body}
	tok := r.bytes("token", maxJWT)
	return tok, r.done()
}

// Redirect tells a client that its avatar moved to node Node, whose
// player endpoints are QUIC (host:port) and WS (a ws:// or wss:// URL; at
// least one is set), and that Seq is the newest of its inputs applied
// here: it rejoins there (Rejoin) and sends its later inputs there,
// while this node goes on sending States until the client leaves it.
type Redirect struct {
	Node   uint32
	QUIC   string
	WS     string
	Avatar world.ObjectID
	Seq    uint64
}

// maxAddr bounds a Redirect's addresses.
const maxAddr = 256

// AppendRedirect appends a Redirect message.
func AppendRedirect(b []byte, m Redirect) []byte {
	b = binary.AppendUvarint(header(b, MsgRedirect), uint64(m.Node))
	b = appendString(b, m.QUIC)
	b = appendString(b, m.WS)
	b = binary.AppendUvarint(b, uint64(m.Avatar))
	return binary.AppendUvarint(b, m.Seq)
}

// DecodeRedirect decodes a Redirect body.
func DecodeRedirect(body []byte) (Redirect, error) {
	r := reader{t: MsgRedirect, p: body}
	n := r.uvarint("node")
	m := Redirect{QUIC: string(r.bytes("quic address", maxAddr)), WS: string(r.bytes("websocket url", maxAddr))}
	m.Avatar = world.ObjectID(r.uvarint("avatar"))
	m.Seq = r.uvarint("input seq")
	switch {
	case r.err != nil:
	case n == 0 || n > math.MaxUint32:
		r.fail("node %d", n)
	case m.QUIC == "" && m.WS == "":
		r.fail("no address")
	case m.Avatar == 0:
		r.fail("avatar 0")
	}
	m.Node = uint32(n)
	if err := r.done(); err != nil {
		return Redirect{}, err
	}
	return m, nil
}

// Rejoin is a client's join at the node its avatar was handed to (or
// failed over to): its token, the avatar's deed (the newest a node
// gave it), the avatar, and the newest of its inputs the old node applied
// (the Redirect's Seq); its inputs after that follow on this connection.
type Rejoin struct {
	Token  []byte
	Deed   []byte
	Avatar world.ObjectID
	Seq    uint64
}

// AppendRejoin appends a Rejoin message.
func AppendRejoin(b []byte, m Rejoin) []byte {
	b = appendBytes(header(b, MsgRejoin), m.Token)
	b = appendBytes(b, m.Deed)
	b = binary.AppendUvarint(b, uint64(m.Avatar))
	return binary.AppendUvarint(b, m.Seq)
}

// DecodeRejoin decodes a Rejoin body (the token and the deed not yet
// verified, and possibly empty; they alias body).
func DecodeRejoin(body []byte) (Rejoin, error) {
	r := reader{t: MsgRejoin, p: body}
	m := Rejoin{Token: r.bytes("token", maxJWT), Deed: r.bytes("deed", MaxDeed)}
	m.Avatar = world.ObjectID(r.uvarint("avatar"))
	m.Seq = r.uvarint("input seq")
	if r.err == nil && m.Avatar == 0 {
		r.fail("avatar 0")
	}
	if err := r.done(); err != nil {
		return Rejoin{}, err
	}
	return m, nil
}

// AppendDeed appends a Deed message carrying an avatar deed.
func AppendDeed(b, deed []byte) []byte { return appendBytes(header(b, MsgDeed), deed) }

// DecodeDeed decodes a Deed body and parses the deed (ParseDeed;
// it aliases body).
func DecodeDeed(body []byte) ([]byte, Deed, error) {
	r := reader{t: MsgDeed, p: body}
	b := r.bytes("deed", MaxDeed)
	if err := r.done(); err != nil {
		return nil, Deed{}, err
	}
	t, err := ParseDeed(b)
	if err != nil {
		return nil, Deed{}, malformed(MsgDeed, "%v", err)
	}
	return b, t, nil
}

// AppendInput appends an Input message: the client's seq-th input (seq
// grows by one per input, from 1) and the game's input bytes.
func AppendInput(b []byte, seq uint64, input []byte) []byte {
	b = binary.AppendUvarint(header(b, MsgInput), seq)
	return appendBytes(b, input)
}

// DecodeInput decodes an Input body; input aliases body.
func DecodeInput(body []byte) (seq uint64, input []byte, err error) {
	r := reader{t: MsgInput, p: body}
	seq = r.uvarint("seq")
	input = r.bytes("input", MaxInput)
	if r.err == nil && seq == 0 {
		r.fail("seq 0")
	}
	return seq, input, r.done()
}

// AppendAck appends an Ack of frame.
func AppendAck(b []byte, frame uint64) []byte { return binary.AppendUvarint(header(b, MsgAck), frame) }

// DecodeAck decodes an Ack body.
func DecodeAck(body []byte) (uint64, error) {
	r := reader{t: MsgAck, p: body}
	f := r.uvarint("frame")
	if r.err == nil && f == 0 {
		r.fail("frame 0")
	}
	return f, r.done()
}

// AppendLeave appends a Leave message.
func AppendLeave(b []byte) []byte { return header(b, MsgLeave) }

// DecodeLeave checks a Leave body (empty).
func DecodeLeave(body []byte) error {
	r := reader{t: MsgLeave, p: body}
	return r.done()
}

// Code says why a node refuses a join or ends a session.
type Code uint8

// Error codes.
const (
	CodeMalformed  Code = iota + 1 // a message failed to decode
	CodeBadToken                   // the token was refused (text says why)
	CodeFull                       // the node has MaxPlayers players
	CodeDuplicate                  // the player is already connected to this node
	CodeJoinFailed                 // the game refused the player
	CodeAvatarGone                 // the avatar no longer exists
	CodeTimeout                    // no Join within the join timeout
	CodeShutdown                   // the node is shutting down
	CodeBadDeed                    // a Rejoin's avatar deed was refused (text says why)
	numCodes
)

var codeNames = [...]string{CodeMalformed: "malformed", CodeBadToken: "bad token", CodeFull: "full",
	CodeDuplicate: "duplicate player", CodeJoinFailed: "join failed", CodeAvatarGone: "avatar gone",
	CodeTimeout: "join timeout", CodeShutdown: "shutdown", CodeBadDeed: "bad deed"}

// String names the code.
func (c Code) String() string {
	if c > 0 && c < numCodes {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// RefusedError is a node's Error message as the client sees it.
type RefusedError struct {
	Code Code
	Text string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("player: node refused: %v: %s", e.Code, e.Text)
}

// AppendError appends an Error message (text is cut to 256 bytes).
func AppendError(b []byte, code Code, text string) []byte {
	if len(text) > maxText {
		text = text[:maxText]
	}
	return appendString(append(header(b, MsgError), byte(code)), text)
}

// DecodeError decodes an Error body.
func DecodeError(body []byte) (*RefusedError, error) {
	r := reader{t: MsgError, p: body}
	c := Code(r.byte1("code"))
	text := r.bytes("text", maxText)
	if r.err == nil && (c == 0 || c >= numCodes) {
		r.fail("unknown code %d", c)
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return &RefusedError{Code: c, Text: string(text)}, nil
}

// Welcome is the body of JoinOK: who the client is, its avatar, the
// node's frame period, how many frames' snapshots the node keeps as delta
// bases (the client keeps as many), and the schema table (the registry's
// space and kinds, in kind order) that State messages refer to.
type Welcome struct {
	Player     PlayerID
	Avatar     world.ObjectID
	FrameEvery time.Duration
	History    int
	// Registry is the node's registry; in a decoded Welcome it is rebuilt
	// from the table with inert objects (see ClientObject).
	Registry *world.Registry
}

// AppendJoinOK appends a JoinOK message.
func AppendJoinOK(b []byte, w Welcome) []byte {
	b = header(b, MsgJoinOK)
	b = appendString(b, string(w.Player))
	b = binary.AppendUvarint(b, uint64(w.Avatar))
	b = binary.AppendUvarint(b, uint64(w.FrameEvery))
	b = binary.AppendUvarint(b, uint64(w.History))
	sp := w.Registry.Space()
	b = binary.AppendUvarint(b, uint64(sp.Dims()))
	for _, n := range sp.Names() {
		b = appendString(b, n)
	}
	b = binary.AppendUvarint(b, uint64(w.Registry.Len()))
	for k := 1; k <= w.Registry.Len(); k++ {
		s := w.Registry.Schema(world.Kind(k))
		b = appendString(b, s.Name())
		b = binary.AppendUvarint(b, uint64(s.NumFields()))
		for i := range s.NumFields() {
			f := s.FieldAt(i)
			b = appendString(b, f.Name)
			b = append(b, byte(f.Type))
			if f.Type == world.Float {
				b = binary.BigEndian.AppendUint64(b, math.Float64bits(f.Quantum))
			}
		}
	}
	return b
}

// maxKinds bounds the schema table a client accepts.
const maxKinds = 256

// DecodeJoinOK decodes a JoinOK body, rebuilding the registry with
// ClientObject objects.
func DecodeJoinOK(body []byte) (Welcome, error) {
	r := reader{t: MsgJoinOK, p: body}
	var w Welcome
	w.Player = PlayerID(r.bytes("player", MaxPlayerID))
	w.Avatar = world.ObjectID(r.uvarint("avatar"))
	fe := r.uvarint("frame period")
	if r.err == nil && (fe == 0 || fe > uint64(time.Minute)) {
		r.fail("frame period %v", time.Duration(fe))
	}
	w.FrameEvery = time.Duration(fe)
	h := r.uvarint("history")
	if r.err == nil && (h < 2 || h > MaxHistory) {
		r.fail("history %d, want 2 to %d", h, MaxHistory)
	}
	w.History = int(h)
	dims := r.uvarint("dims")
	if r.err == nil && (dims == 0 || dims > world.MaxDims) {
		r.fail("%d dimensions", dims)
	}
	var names []string
	for i := 0; r.err == nil && i < int(dims); i++ {
		names = append(names, string(r.bytes("attribute", maxName)))
	}
	nk := r.uvarint("kinds")
	if r.err == nil && (nk == 0 || nk > maxKinds) {
		r.fail("%d kinds", nk)
	}
	if r.err != nil {
		return Welcome{}, r.err
	}
	space, err := world.NewSpace(names...)
	if err != nil {
		return Welcome{}, malformed(MsgJoinOK, "%v", err)
	}
	schemas := make([]*world.Schema, 0, nk)
	for k := 0; r.err == nil && k < int(nk); k++ {
		name := string(r.bytes("schema name", maxName))
		nf := r.uvarint("fields")
		if r.err == nil && (nf == 0 || nf > world.MaxFields) {
			r.fail("schema %q has %d fields", name, nf)
		}
		fields := make([]world.Field, 0, min(nf, world.MaxFields))
		for i := 0; r.err == nil && i < int(nf); i++ {
			f := world.Field{Name: string(r.bytes("field name", maxName)), Type: world.FieldType(r.byte1("field type"))}
			if f.Type == world.Float && r.err == nil {
				if len(r.p) < 8 {
					r.fail("quantum truncated")
					break
				}
				f.Quantum = math.Float64frombits(binary.BigEndian.Uint64(r.p))
				r.p = r.p[8:]
				if f.Quantum == 0 {
					// A node sends the schema's resolved quantum, never 0
					// (which would stand for world.DefaultQuantum and
					// re-encode differently).
					r.fail("field %q has quantum 0", f.Name)
					break
				}
			}
			fields = append(fields, f)
		}
		if r.err != nil {
			break
		}
		s, err := world.NewSchema(name, space, fields, NewClientObject)
		if err != nil {
			return Welcome{}, malformed(MsgJoinOK, "%v", err)
		}
		schemas = append(schemas, s)
	}
	if err := r.done(); err != nil {
		return Welcome{}, err
	}
	if err := w.Player.Validate(); err != nil {
		return Welcome{}, malformed(MsgJoinOK, "%v", err)
	}
	if w.Avatar == 0 {
		return Welcome{}, malformed(MsgJoinOK, "avatar 0")
	}
	reg, err := world.NewRegistry(space, schemas...)
	if err != nil {
		return Welcome{}, malformed(MsgJoinOK, "%v", err)
	}
	w.Registry = reg
	return w, nil
}

// ClientObject is the inert object a client holds for every object it
// sees: its state only (clients run no think functions).
type ClientObject struct{ st *world.State }

// NewClientObject wraps st.
func NewClientObject(st *world.State) world.Object { return &ClientObject{st} }

// State returns the object's state.
func (o *ClientObject) State() *world.State { return o.st }

// Interest appends nothing.
func (o *ClientObject) Interest(dst []world.Box) []world.Box { return dst }

// Think does nothing.
func (o *ClientObject) Think(world.Context) {}

// The client protocol (version 2) of overworld's player endpoint: the
// encoders and decoders of every message, byte for byte as the Go package
// live/player writes and reads them (docs/protocol.md).
//
// Integers that count (frames, input seqs, lengths) are JavaScript
// numbers: exact below 2^53 (a frame counter reaches that after millions
// of years), decoded but rounded above. Object IDs and raw field values
// are BigInts, exact over their 64 bits.

/** The protocol version: the first byte of every message. */
export const VERSION = 2;

/** Message types: the second byte of every message. */
export const MsgType = {
  Join: 1,
  JoinOK: 2,
  Input: 3,
  State: 4,
  Ack: 5,
  Leave: 6,
  Error: 7,
  Redirect: 8,
  Rejoin: 9,
  Deed: 10,
} as const;
export type MsgType = (typeof MsgType)[keyof typeof MsgType];

const msgNames = ["", "join", "joinok", "input", "state", "ack", "leave", "error", "redirect", "rejoin", "deed"];

/** The name of a message type, as the Go package prints it. */
export function msgName(t: number): string {
  return t > 0 && t < msgNames.length ? msgNames[t] : `MsgType(${t})`;
}

/** Limits of the protocol. */
export const MAX_INPUT = 256;
export const MAX_CLIENT_MESSAGE = 2560;
export const MAX_MESSAGE = 4 << 20;
export const MAX_HISTORY = 1024;
export const MAX_PLAYER_ID = 64;
export const MAX_WORLD = 64;
export const MAX_TOKEN = 2 + MAX_PLAYER_ID + 1 + MAX_WORLD + 2 + 16 + 16 + 64;
/** The longest avatar deed: version, avatar, player, world, times, a node certificate of at most 1,024 bytes, a signature of at most 96. */
export const MAX_DEED = 1 + 8 + 1 + MAX_PLAYER_ID + 1 + MAX_WORLD + 16 + 2 + 1024 + 1 + 96;
export const MAX_DIMS = 4;
export const MAX_FIELDS = 64;
const MAX_NAME = 64;
const MAX_TEXT = 256;
const MAX_ADDR = 256;
const MAX_KINDS = 256;

/** Error codes of an Error message. */
export const Code = {
  Malformed: 1,
  BadToken: 2,
  Full: 3,
  Duplicate: 4,
  JoinFailed: 5,
  AvatarGone: 6,
  Timeout: 7,
  Shutdown: 8,
  BadDeed: 9,
} as const;
const codeNames = ["", "malformed", "bad token", "full", "duplicate player", "join failed", "avatar gone", "join timeout", "shutdown", "bad deed"];

/** The name of an error code. */
export function codeName(c: number): string {
  return c > 0 && c < codeNames.length ? codeNames[c] : `Code(${c})`;
}

/** Every decoding error is a MalformedError. */
export class MalformedError extends Error {
  constructor(message: string) {
    super("player: malformed message" + message);
    this.name = "MalformedError";
  }
}

function malformed(t: number, what: string): MalformedError {
  return new MalformedError(` (${msgName(t)}): ${what}`);
}

/** A node's Error message: why it refused a join or ended the session. */
export class RefusedError extends Error {
  constructor(
    readonly code: number,
    readonly text: string,
  ) {
    super(`player: node refused: ${codeName(code)}: ${text}`);
    this.name = "RefusedError";
  }
}

const utf8 = new TextEncoder();
const utf8dec = new TextDecoder();
const TWO53 = 2 ** 53;
const U64 = (1n << 64n) - 1n;

/** Field types of a schema. */
export const FieldType = { Float: 1, Int: 2, Bool: 3, Ref: 4 } as const;
export type FieldType = (typeof FieldType)[keyof typeof FieldType];

/** One field of a schema. */
export interface Field {
  name: string;
  type: FieldType;
  /** The float field's quantum (0 for other types). */
  quantum: number;
}

/** One kind of object: its name and fields, in field order. */
export interface Schema {
  kind: number;
  name: string;
  fields: Field[];
  /** Field index by name. */
  index: Map<string, number>;
  /** Bit i set when field i is a bool. */
  bools: bigint;
  /** 1 at index i when field i is a bool. */
  boolAt: Uint8Array;
}

/** The body of JoinOK: who the client is and the schema table. */
export interface Welcome {
  player: string;
  avatar: bigint;
  /** The node's frame period in nanoseconds. */
  frameEveryNs: number;
  /** How many frames' snapshots the node keeps as delta bases. */
  history: number;
  /** The space's attribute names. */
  space: string[];
  /** The schemas by kind: kinds[k - 1] is kind k. */
  kinds: Schema[];
}

/** A node's redirect: the avatar moved to node `node`. */
export interface Redirect {
  node: number;
  quic: string;
  ws: string;
  avatar: bigint;
  seq: number;
}

/** A client's rejoin at the node its avatar was handed to (or failed over to). */
export interface Rejoin {
  token: Uint8Array;
  /** The avatar's deed: the newest a node gave (a Deed message). */
  deed: Uint8Array;
  avatar: bigint;
  seq: number;
}

/**
 * An avatar deed, as a node signed it: the proof a Rejoin presents
 * that the avatar is the player's. The client keeps the bytes and checks
 * only their layout; nodes check the signature (docs/protocol.md).
 */
export interface Deed {
  /** The deed's bytes, as a Rejoin carries them. */
  bytes: Uint8Array;
  avatar: bigint;
  player: string;
  world: string;
  /** Unix seconds. */
  issued: number;
  /** Unix seconds. */
  expires: number;
}

/** Reader decodes a message body: varints, byte strings, bytes. */
export class Reader {
  p: Uint8Array;
  i: number;
  end: number;
  constructor(
    readonly t: number,
    p: Uint8Array,
    start = 0,
  ) {
    this.p = p;
    this.i = start;
    this.end = p.length;
  }

  fail(what: string): never {
    throw malformed(this.t, what);
  }

  /** A minimal uvarint of up to 64 bits, as a number (rounded above 2^53). */
  uv(what: string): number {
    const p = this.p;
    let i = this.i;
    if (i < this.end && p[i] < 0x80) {
      this.i = i + 1;
      return p[i];
    }
    let v = 0;
    let mul = 1;
    for (let k = 0; ; k++) {
      if (i >= this.end || k >= 10) this.fail(`${what}: bad or non-minimal varint`);
      const b = p[i++];
      if (k === 9 && b > 1) this.fail(`${what}: bad or non-minimal varint`);
      v += (b & 0x7f) * mul;
      mul *= 128;
      if (b < 0x80) {
        if (k > 0 && b === 0) this.fail(`${what}: bad or non-minimal varint`);
        break;
      }
    }
    this.i = i;
    return v;
  }

  /** A minimal uvarint of up to 64 bits, as a BigInt. */
  uvBig(what: string): bigint {
    const p = this.p;
    let i = this.i;
    if (i < this.end && p[i] < 0x80) {
      this.i = i + 1;
      return BigInt(p[i]);
    }
    // The first 49 bits in a number (exact), the rest, if any, as BigInts.
    let lo = 0;
    let mul = 1;
    let v = -1n;
    for (let k = 0; ; k++) {
      if (i >= this.end || k >= 10) this.fail(`${what}: bad or non-minimal varint`);
      const b = p[i++];
      if (k === 9 && b > 1) this.fail(`${what}: bad or non-minimal varint`);
      if (k < 7) {
        lo += (b & 0x7f) * mul;
        mul *= 128;
      } else {
        if (v < 0n) v = BigInt(lo);
        v |= BigInt(b & 0x7f) << BigInt(7 * k);
      }
      if (b < 0x80) {
        if (k > 0 && b === 0) this.fail(`${what}: bad or non-minimal varint`);
        break;
      }
    }
    this.i = i;
    return v < 0n ? BigInt(lo) : v;
  }

  bytes(what: string, max: number): Uint8Array {
    const n = this.uv(what + " length");
    if (n > max || n > this.end - this.i) this.fail(`${what}: length ${n} (limit ${max}, ${this.end - this.i} bytes left)`);
    const b = this.p.subarray(this.i, this.i + n);
    this.i += n;
    return b;
  }

  string(what: string, max: number): string {
    return utf8dec.decode(this.bytes(what, max));
  }

  byte(what: string): number {
    if (this.i >= this.end) this.fail(`${what}: truncated`);
    return this.p[this.i++];
  }

  done(): void {
    if (this.i !== this.end) this.fail(`${this.end - this.i} trailing bytes`);
  }
}

/** Writer builds a message. */
export class Writer {
  buf: Uint8Array;
  n = 0;
  constructor(size = 64) {
    this.buf = new Uint8Array(size);
  }
  private grow(k: number) {
    if (this.n + k <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    b.set(this.buf.subarray(0, this.n));
    this.buf = b;
  }
  byte(b: number): this {
    this.grow(1);
    this.buf[this.n++] = b;
    return this;
  }
  /** A uvarint of a non-negative integer number below 2^53. */
  uv(v: number): this {
    if (!(v >= 0 && v < TWO53 && Number.isInteger(v))) throw new RangeError(`varint ${v}: want an integer in [0, 2^53)`);
    this.grow(10);
    while (v >= 0x80) {
      this.buf[this.n++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.n++] = v;
    return this;
  }
  /** A uvarint of a BigInt in [0, 2^64). */
  uvBig(v: bigint): this {
    if (v < 0n || v > U64) throw new RangeError(`varint ${v}: want [0, 2^64)`);
    this.grow(10);
    while (v >= 0x80n) {
      this.buf[this.n++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.n++] = Number(v);
    return this;
  }
  bytes(b: Uint8Array): this {
    this.uv(b.length);
    this.grow(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
    return this;
  }
  string(s: string): this {
    return this.bytes(utf8.encode(s));
  }
  raw(b: Uint8Array): this {
    this.grow(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
    return this;
  }
  f64(x: number): this {
    this.grow(8);
    new DataView(this.buf.buffer, this.buf.byteOffset).setFloat64(this.n, x, false);
    this.n += 8;
    return this;
  }
  /** The message so far (a view of the buffer). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.n);
  }
}

function header(t: number, size = 32): Writer {
  return new Writer(size).byte(VERSION).byte(t);
}

/** Checks a message's version and type; returns its type (the body starts at byte 2). */
export function open(msg: Uint8Array): number {
  if (msg.length < 2) throw new MalformedError(`: ${msg.length} bytes, want at least a 2-byte header`);
  if (msg[0] !== VERSION) throw new MalformedError(`: protocol version ${msg[0]}, want ${VERSION}`);
  const t = msg[1];
  if (t === 0 || t > MsgType.Deed) throw new MalformedError(`: unknown message type ${t}`);
  return t;
}

function body(msg: Uint8Array, t: number): Reader {
  const got = open(msg);
  if (got !== t) throw malformed(got, `expected ${msgName(t)}`);
  return new Reader(t, msg, 2);
}

/** A Join message carrying token (an opaque byte string). */
export function encodeJoin(token: Uint8Array): Uint8Array {
  return header(MsgType.Join, token.length + 4).bytes(token).finish();
}

/** The token of a Join message. */
export function decodeJoin(msg: Uint8Array): Uint8Array {
  const r = body(msg, MsgType.Join);
  const tok = r.bytes("token", MAX_TOKEN);
  r.done();
  return tok;
}

/** An Input message: the client's seq-th input (from 1) and the game's bytes. */
export function encodeInput(seq: number, input: Uint8Array): Uint8Array {
  return header(MsgType.Input, input.length + 12).uv(seq).bytes(input).finish();
}

/** The seq and game input of an Input message. */
export function decodeInput(msg: Uint8Array): { seq: number; input: Uint8Array } {
  const r = body(msg, MsgType.Input);
  const seq = r.uv("seq");
  const input = r.bytes("input", MAX_INPUT);
  if (seq === 0) r.fail("seq 0");
  r.done();
  return { seq, input };
}

/** An Ack of frame. */
export function encodeAck(frame: number): Uint8Array {
  return header(MsgType.Ack, 12).uv(frame).finish();
}

/** The frame of an Ack message. */
export function decodeAck(msg: Uint8Array): number {
  const r = body(msg, MsgType.Ack);
  const f = r.uv("frame");
  if (f === 0) r.fail("frame 0");
  r.done();
  return f;
}

/** A Leave message. */
export function encodeLeave(): Uint8Array {
  return header(MsgType.Leave, 2).finish();
}

/** Checks a Leave message (empty body). */
export function decodeLeave(msg: Uint8Array): void {
  body(msg, MsgType.Leave).done();
}

/** An Error message (text cut to 256 bytes). */
export function encodeError(code: number, text: string): Uint8Array {
  let t = utf8.encode(text);
  if (t.length > MAX_TEXT) t = t.subarray(0, MAX_TEXT);
  return header(MsgType.Error, t.length + 8).byte(code).bytes(t).finish();
}

/** The code and text of an Error message. */
export function decodeError(msg: Uint8Array): RefusedError {
  const r = body(msg, MsgType.Error);
  const c = r.byte("code");
  const text = r.string("text", MAX_TEXT);
  if (c === 0 || c >= codeNames.length) r.fail(`unknown code ${c}`);
  r.done();
  return new RefusedError(c, text);
}

/** A Redirect message. */
export function encodeRedirect(m: Redirect): Uint8Array {
  return header(MsgType.Redirect, 64).uv(m.node).string(m.quic).string(m.ws).uvBig(m.avatar).uv(m.seq).finish();
}

/** The body of a Redirect message. */
export function decodeRedirect(msg: Uint8Array): Redirect {
  const r = body(msg, MsgType.Redirect);
  const node = r.uv("node");
  const quic = r.string("quic address", MAX_ADDR);
  const ws = r.string("websocket url", MAX_ADDR);
  const avatar = r.uvBig("avatar");
  const seq = r.uv("input seq");
  if (node === 0 || node > 0xffffffff) r.fail(`node ${node}`);
  if (quic === "" && ws === "") r.fail("no address");
  if (avatar === 0n) r.fail("avatar 0");
  r.done();
  return { node, quic, ws, avatar, seq };
}

/** A Rejoin message. */
export function encodeRejoin(m: Rejoin): Uint8Array {
  return header(MsgType.Rejoin, m.token.length + m.deed.length + 28).bytes(m.token).bytes(m.deed).uvBig(m.avatar).uv(m.seq).finish();
}

/** The body of a Rejoin message. */
export function decodeRejoin(msg: Uint8Array): Rejoin {
  const r = body(msg, MsgType.Rejoin);
  const token = r.bytes("token", MAX_TOKEN);
  const deed = r.bytes("deed", MAX_DEED);
  const avatar = r.uvBig("avatar");
  const seq = r.uv("input seq");
  if (avatar === 0n) r.fail("avatar 0");
  r.done();
  return { token, deed, avatar, seq };
}

/** A Deed message carrying an avatar deed's bytes. */
export function encodeDeed(deed: Uint8Array): Uint8Array {
  return header(MsgType.Deed, deed.length + 4).bytes(deed).finish();
}

/** The avatar deed of a Deed message, its layout checked as the Go package's ParseDeed checks it. */
export function decodeDeed(msg: Uint8Array): Deed {
  const r = body(msg, MsgType.Deed);
  const bytes = r.bytes("deed", MAX_DEED);
  r.done();
  return parseDeed(bytes, (what) => r.fail(`player: avatar deed refused: malformed deed: ${what}`));
}

function parseDeed(b: Uint8Array, bad: (what: string) => never): Deed {
  if (b.length === 0) bad("empty");
  if (b[0] !== 1) bad(`version ${b[0]}, want 1`);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 1;
  const need = (n: number, what: string) => {
    if (b.length - i < n) bad(`${b.length} bytes, truncated in the ${what}`);
  };
  need(8, "avatar");
  const avatar = dv.getBigUint64(i, false);
  i += 8;
  if (avatar === 0n) bad("avatar 0");
  const text = (what: string): string => {
    need(1, what);
    const n = b[i++];
    need(n, what);
    const s = utf8dec.decode(b.subarray(i, i + n));
    i += n;
    if (n === 0 || n > 64 || badPlayerChar(s)) bad(`${what} "${s}" is empty, too long or has a non-printable or space character`);
    return s;
  };
  const player = text("player ID");
  const world = text("world");
  need(16, "times");
  const issued = dv.getBigUint64(i, false);
  const expires = dv.getBigUint64(i + 8, false);
  i += 16;
  if (issued >= 1n << 63n || expires <= issued || expires > 1n << 40n) bad(`times ${issued}..${expires} out of range`);
  need(2, "certificate length");
  const cl = dv.getUint16(i, false);
  i += 2;
  if (cl === 0 || cl > 1024) bad(`certificate of ${cl} bytes, want 1 to 1024`);
  need(cl, "certificate");
  i += cl;
  need(1, "signature length");
  const sl = b[i++];
  if (sl === 0 || sl > 96) bad(`signature of ${sl} bytes, want 1 to 96`);
  need(sl, "signature");
  i += sl;
  if (i !== b.length) bad(`${b.length - i} trailing bytes`);
  return { bytes: b, avatar, player, world, issued: Number(issued), expires: Number(expires) };
}

const badName = /^$|[ \t\n]/;

// Whether a player ID has a character Go's unicode.IsPrint refuses or
// unicode.IsSpace accepts: controls, separators and spaces, the common
// format characters, surrogates, private use, and U+FFFD (invalid UTF-8).
function badPlayerChar(s: string): boolean {
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (
      c <= 0x20 ||
      (c >= 0x7f && c <= 0xa0) ||
      c === 0xad ||
      c === 0x1680 ||
      (c >= 0x2000 && c <= 0x200f) ||
      (c >= 0x2028 && c <= 0x202f) ||
      (c >= 0x205f && c <= 0x206f) ||
      c === 0x3000 ||
      (c >= 0xd800 && c <= 0xf8ff) ||
      c === 0xfeff ||
      c === 0xfffd ||
      (c >= 0xfff9 && c <= 0xfffb) ||
      c >= 0xf0000
    ) {
      return true;
    }
  }
  return false;
}

/** Builds a schema from its parts, checked as the Go package checks it. */
export function makeSchema(kind: number, name: string, space: string[], fields: Field[]): Schema {
  const bad = (what: string): never => {
    throw new MalformedError(` (joinok): world: bad schema "${name}": ${what}`);
  };
  if (badName.test(name)) bad("invalid name");
  if (fields.length === 0 || fields.length > MAX_FIELDS) bad(`has ${fields.length} fields, want 1 to ${MAX_FIELDS}`);
  const index = new Map<string, number>();
  let bools = 0n;
  const boolAt = new Uint8Array(fields.length);
  fields.forEach((f, i) => {
    if (badName.test(f.name)) bad(`field ${i} has an invalid name "${f.name}"`);
    if (index.has(f.name)) bad(`field "${f.name}" declared twice`);
    index.set(f.name, i);
    if (f.type < 1 || f.type > 4) bad(`field "${f.name}" has unknown type ${f.type}`);
    if (f.type === FieldType.Float && !(f.quantum > 0 && f.quantum < Infinity)) bad(`field "${f.name}" has quantum ${f.quantum}`);
    if (f.type === FieldType.Bool) {
      bools |= 1n << BigInt(i);
      boolAt[i] = 1;
    }
  });
  for (const a of space) {
    const i = index.get(a);
    if (i === undefined) bad(`has no field for attribute "${a}" of its space`);
    const t = fields[i!].type;
    if (t !== FieldType.Float && t !== FieldType.Int) bad(`attribute field "${a}" is not float or int`);
  }
  return { kind, name, fields, index, bools, boolAt };
}

/** A JoinOK message. */
export function encodeJoinOK(w: Welcome): Uint8Array {
  const b = header(MsgType.JoinOK, 256).string(w.player).uvBig(w.avatar).uv(w.frameEveryNs).uv(w.history).uv(w.space.length);
  for (const n of w.space) b.string(n);
  b.uv(w.kinds.length);
  for (const s of w.kinds) {
    b.string(s.name).uv(s.fields.length);
    for (const f of s.fields) {
      b.string(f.name).byte(f.type);
      if (f.type === FieldType.Float) b.f64(f.quantum);
    }
  }
  return b.finish();
}

/** The Welcome of a JoinOK message, with its schema table checked. */
export function decodeJoinOK(msg: Uint8Array): Welcome {
  const r = body(msg, MsgType.JoinOK);
  const player = r.string("player", MAX_PLAYER_ID);
  const avatar = r.uvBig("avatar");
  const fe = r.uv("frame period");
  if (fe === 0 || fe > 60e9) r.fail(`frame period ${fe}ns`);
  const history = r.uv("history");
  if (history < 2 || history > MAX_HISTORY) r.fail(`history ${history}, want 2 to ${MAX_HISTORY}`);
  const dims = r.uv("dims");
  if (dims === 0 || dims > MAX_DIMS) r.fail(`${dims} dimensions`);
  const space: string[] = [];
  for (let i = 0; i < dims; i++) space.push(r.string("attribute", MAX_NAME));
  const nk = r.uv("kinds");
  if (nk === 0 || nk > MAX_KINDS) r.fail(`${nk} kinds`);
  space.forEach((n, i) => {
    if (badName.test(n)) r.fail(`world: attribute ${i} has an invalid name "${n}"`);
    if (space.indexOf(n) !== i) r.fail(`world: attribute "${n}" named twice`);
  });
  const kinds: Schema[] = [];
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  for (let k = 0; k < nk; k++) {
    const name = r.string("schema name", MAX_NAME);
    const nf = r.uv("fields");
    if (nf === 0 || nf > MAX_FIELDS) r.fail(`schema "${name}" has ${nf} fields`);
    const fields: Field[] = [];
    for (let i = 0; i < nf; i++) {
      const fname = r.string("field name", MAX_NAME);
      const type = r.byte("field type") as FieldType;
      let quantum = 0;
      if (type === FieldType.Float) {
        if (r.end - r.i < 8) r.fail("quantum truncated");
        quantum = dv.getFloat64(r.i, false);
        r.i += 8;
        if (quantum === 0) r.fail(`field "${fname}" has quantum 0`);
      }
      fields.push({ name: fname, type, quantum });
    }
    kinds.push(makeSchema(k + 1, name, space, fields));
  }
  r.done();
  if (player.length === 0 || utf8.encode(player).length > MAX_PLAYER_ID || badPlayerChar(player)) {
    r.fail(`player ID "${player}" is empty, too long or has a non-printable or space character`);
  }
  if (avatar === 0n) r.fail("avatar 0");
  const names = new Set<string>();
  for (const s of kinds) {
    if (names.has(s.name)) r.fail(`world: schema "${s.name}" registered twice`);
    names.add(s.name);
  }
  return { player, avatar, frameEveryNs: fe, history, space, kinds };
}

/** Formats an object ID as the Go package prints it: origin.seq. */
export function idString(id: bigint): string {
  return `${id >> 32n}.${id & 0xffffffffn}`;
}

var __defProp = Object.defineProperty;
var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

// src/proto.ts
var VERSION = 2;
var MsgType = {
  Join: 1,
  JoinOK: 2,
  Input: 3,
  State: 4,
  Ack: 5,
  Leave: 6,
  Error: 7,
  Redirect: 8,
  Rejoin: 9,
  Deed: 10
};
var msgNames = ["", "join", "joinok", "input", "state", "ack", "leave", "error", "redirect", "rejoin", "deed"];
function msgName(t) {
  return t > 0 && t < msgNames.length ? msgNames[t] : `MsgType(${t})`;
}
var MAX_INPUT = 256;
var MAX_CLIENT_MESSAGE = 2560;
var MAX_MESSAGE = 4 << 20;
var MAX_HISTORY = 1024;
var MAX_PLAYER_ID = 64;
var MAX_WORLD = 64;
var MAX_TOKEN = 2 + MAX_PLAYER_ID + 1 + MAX_WORLD + 2 + 16 + 16 + 64;
var MAX_DEED = 1 + 8 + 1 + MAX_PLAYER_ID + 1 + MAX_WORLD + 16 + 2 + 1024 + 1 + 96;
var MAX_DIMS = 4;
var MAX_FIELDS = 64;
var MAX_NAME = 64;
var MAX_TEXT = 256;
var MAX_ADDR = 256;
var MAX_KINDS = 256;
var Code = {
  Malformed: 1,
  BadToken: 2,
  Full: 3,
  Duplicate: 4,
  JoinFailed: 5,
  AvatarGone: 6,
  Timeout: 7,
  Shutdown: 8,
  BadDeed: 9
};
var codeNames = ["", "malformed", "bad token", "full", "duplicate player", "join failed", "avatar gone", "join timeout", "shutdown", "bad deed"];
function codeName(c) {
  return c > 0 && c < codeNames.length ? codeNames[c] : `Code(${c})`;
}
var MalformedError = class extends Error {
  constructor(message) {
    super("player: malformed message" + message);
    this.name = "MalformedError";
  }
};
function malformed(t, what) {
  return new MalformedError(` (${msgName(t)}): ${what}`);
}
var RefusedError = class extends Error {
  constructor(code, text) {
    super(`player: node refused: ${codeName(code)}: ${text}`);
    __publicField(this, "code", code);
    __publicField(this, "text", text);
    this.name = "RefusedError";
  }
};
var utf8 = new TextEncoder();
var utf8dec = new TextDecoder();
var TWO53 = 2 ** 53;
var U64 = (1n << 64n) - 1n;
var FieldType = { Float: 1, Int: 2, Bool: 3, Ref: 4 };
var Reader = class {
  constructor(t, p, start = 0) {
    __publicField(this, "t", t);
    __publicField(this, "p");
    __publicField(this, "i");
    __publicField(this, "end");
    this.p = p;
    this.i = start;
    this.end = p.length;
  }
  fail(what) {
    throw malformed(this.t, what);
  }
  /** A minimal uvarint of up to 64 bits, as a number (rounded above 2^53). */
  uv(what) {
    const p = this.p;
    let i = this.i;
    if (i < this.end && p[i] < 128) {
      this.i = i + 1;
      return p[i];
    }
    let v = 0;
    let mul = 1;
    for (let k = 0; ; k++) {
      if (i >= this.end || k >= 10) this.fail(`${what}: bad or non-minimal varint`);
      const b = p[i++];
      if (k === 9 && b > 1) this.fail(`${what}: bad or non-minimal varint`);
      v += (b & 127) * mul;
      mul *= 128;
      if (b < 128) {
        if (k > 0 && b === 0) this.fail(`${what}: bad or non-minimal varint`);
        break;
      }
    }
    this.i = i;
    return v;
  }
  /** A minimal uvarint of up to 64 bits, as a BigInt. */
  uvBig(what) {
    const p = this.p;
    let i = this.i;
    if (i < this.end && p[i] < 128) {
      this.i = i + 1;
      return BigInt(p[i]);
    }
    let lo = 0;
    let mul = 1;
    let v = -1n;
    for (let k = 0; ; k++) {
      if (i >= this.end || k >= 10) this.fail(`${what}: bad or non-minimal varint`);
      const b = p[i++];
      if (k === 9 && b > 1) this.fail(`${what}: bad or non-minimal varint`);
      if (k < 7) {
        lo += (b & 127) * mul;
        mul *= 128;
      } else {
        if (v < 0n) v = BigInt(lo);
        v |= BigInt(b & 127) << BigInt(7 * k);
      }
      if (b < 128) {
        if (k > 0 && b === 0) this.fail(`${what}: bad or non-minimal varint`);
        break;
      }
    }
    this.i = i;
    return v < 0n ? BigInt(lo) : v;
  }
  bytes(what, max) {
    const n = this.uv(what + " length");
    if (n > max || n > this.end - this.i) this.fail(`${what}: length ${n} (limit ${max}, ${this.end - this.i} bytes left)`);
    const b = this.p.subarray(this.i, this.i + n);
    this.i += n;
    return b;
  }
  string(what, max) {
    return utf8dec.decode(this.bytes(what, max));
  }
  byte(what) {
    if (this.i >= this.end) this.fail(`${what}: truncated`);
    return this.p[this.i++];
  }
  done() {
    if (this.i !== this.end) this.fail(`${this.end - this.i} trailing bytes`);
  }
};
var Writer = class {
  constructor(size = 64) {
    __publicField(this, "buf");
    __publicField(this, "n", 0);
    this.buf = new Uint8Array(size);
  }
  grow(k) {
    if (this.n + k <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    b.set(this.buf.subarray(0, this.n));
    this.buf = b;
  }
  byte(b) {
    this.grow(1);
    this.buf[this.n++] = b;
    return this;
  }
  /** A uvarint of a non-negative integer number below 2^53. */
  uv(v) {
    if (!(v >= 0 && v < TWO53 && Number.isInteger(v))) throw new RangeError(`varint ${v}: want an integer in [0, 2^53)`);
    this.grow(10);
    while (v >= 128) {
      this.buf[this.n++] = v % 128 | 128;
      v = Math.floor(v / 128);
    }
    this.buf[this.n++] = v;
    return this;
  }
  /** A uvarint of a BigInt in [0, 2^64). */
  uvBig(v) {
    if (v < 0n || v > U64) throw new RangeError(`varint ${v}: want [0, 2^64)`);
    this.grow(10);
    while (v >= 0x80n) {
      this.buf[this.n++] = Number(v & 0x7fn) | 128;
      v >>= 7n;
    }
    this.buf[this.n++] = Number(v);
    return this;
  }
  bytes(b) {
    this.uv(b.length);
    this.grow(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
    return this;
  }
  string(s) {
    return this.bytes(utf8.encode(s));
  }
  raw(b) {
    this.grow(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
    return this;
  }
  f64(x) {
    this.grow(8);
    new DataView(this.buf.buffer, this.buf.byteOffset).setFloat64(this.n, x, false);
    this.n += 8;
    return this;
  }
  /** The message so far (a view of the buffer). */
  finish() {
    return this.buf.subarray(0, this.n);
  }
};
function header(t, size = 32) {
  return new Writer(size).byte(VERSION).byte(t);
}
function open(msg) {
  if (msg.length < 2) throw new MalformedError(`: ${msg.length} bytes, want at least a 2-byte header`);
  if (msg[0] !== VERSION) throw new MalformedError(`: protocol version ${msg[0]}, want ${VERSION}`);
  const t = msg[1];
  if (t === 0 || t > MsgType.Deed) throw new MalformedError(`: unknown message type ${t}`);
  return t;
}
function body(msg, t) {
  const got = open(msg);
  if (got !== t) throw malformed(got, `expected ${msgName(t)}`);
  return new Reader(t, msg, 2);
}
function encodeJoin(token) {
  return header(MsgType.Join, token.length + 4).bytes(token).finish();
}
function decodeJoin(msg) {
  const r = body(msg, MsgType.Join);
  const tok = r.bytes("token", MAX_TOKEN);
  r.done();
  return tok;
}
function encodeInput(seq, input) {
  return header(MsgType.Input, input.length + 12).uv(seq).bytes(input).finish();
}
function decodeInput(msg) {
  const r = body(msg, MsgType.Input);
  const seq = r.uv("seq");
  const input = r.bytes("input", MAX_INPUT);
  if (seq === 0) r.fail("seq 0");
  r.done();
  return { seq, input };
}
function encodeAck(frame) {
  return header(MsgType.Ack, 12).uv(frame).finish();
}
function decodeAck(msg) {
  const r = body(msg, MsgType.Ack);
  const f = r.uv("frame");
  if (f === 0) r.fail("frame 0");
  r.done();
  return f;
}
function encodeLeave() {
  return header(MsgType.Leave, 2).finish();
}
function decodeLeave(msg) {
  body(msg, MsgType.Leave).done();
}
function encodeError(code, text) {
  let t = utf8.encode(text);
  if (t.length > MAX_TEXT) t = t.subarray(0, MAX_TEXT);
  return header(MsgType.Error, t.length + 8).byte(code).bytes(t).finish();
}
function decodeError(msg) {
  const r = body(msg, MsgType.Error);
  const c = r.byte("code");
  const text = r.string("text", MAX_TEXT);
  if (c === 0 || c >= codeNames.length) r.fail(`unknown code ${c}`);
  r.done();
  return new RefusedError(c, text);
}
function encodeRedirect(m) {
  return header(MsgType.Redirect, 64).uv(m.node).string(m.quic).string(m.ws).uvBig(m.avatar).uv(m.seq).finish();
}
function decodeRedirect(msg) {
  const r = body(msg, MsgType.Redirect);
  const node = r.uv("node");
  const quic = r.string("quic address", MAX_ADDR);
  const ws = r.string("websocket url", MAX_ADDR);
  const avatar = r.uvBig("avatar");
  const seq = r.uv("input seq");
  if (node === 0 || node > 4294967295) r.fail(`node ${node}`);
  if (quic === "" && ws === "") r.fail("no address");
  if (avatar === 0n) r.fail("avatar 0");
  r.done();
  return { node, quic, ws, avatar, seq };
}
function encodeRejoin(m) {
  return header(MsgType.Rejoin, m.token.length + m.deed.length + 28).bytes(m.token).bytes(m.deed).uvBig(m.avatar).uv(m.seq).finish();
}
function decodeRejoin(msg) {
  const r = body(msg, MsgType.Rejoin);
  const token = r.bytes("token", MAX_TOKEN);
  const deed = r.bytes("deed", MAX_DEED);
  const avatar = r.uvBig("avatar");
  const seq = r.uv("input seq");
  if (avatar === 0n) r.fail("avatar 0");
  r.done();
  return { token, deed, avatar, seq };
}
function encodeDeed(deed) {
  return header(MsgType.Deed, deed.length + 4).bytes(deed).finish();
}
function decodeDeed(msg) {
  const r = body(msg, MsgType.Deed);
  const bytes = r.bytes("deed", MAX_DEED);
  r.done();
  return parseDeed(bytes, (what) => r.fail(`player: avatar deed refused: malformed deed: ${what}`));
}
function parseDeed(b, bad) {
  if (b.length === 0) bad("empty");
  if (b[0] !== 1) bad(`version ${b[0]}, want 1`);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 1;
  const need = (n, what) => {
    if (b.length - i < n) bad(`${b.length} bytes, truncated in the ${what}`);
  };
  need(8, "avatar");
  const avatar = dv.getBigUint64(i, false);
  i += 8;
  if (avatar === 0n) bad("avatar 0");
  const text = (what) => {
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
var badName = /^$|[ \t\n]/;
function badPlayerChar(s) {
  for (const ch of s) {
    const c = ch.codePointAt(0);
    if (c <= 32 || c >= 127 && c <= 160 || c === 173 || c === 5760 || c >= 8192 && c <= 8207 || c >= 8232 && c <= 8239 || c >= 8287 && c <= 8303 || c === 12288 || c >= 55296 && c <= 63743 || c === 65279 || c === 65533 || c >= 65529 && c <= 65531 || c >= 983040) {
      return true;
    }
  }
  return false;
}
function makeSchema(kind, name, space, fields) {
  const bad = (what) => {
    throw new MalformedError(` (joinok): world: bad schema "${name}": ${what}`);
  };
  if (badName.test(name)) bad("invalid name");
  if (fields.length === 0 || fields.length > MAX_FIELDS) bad(`has ${fields.length} fields, want 1 to ${MAX_FIELDS}`);
  const index = /* @__PURE__ */ new Map();
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
    if (i === void 0) bad(`has no field for attribute "${a}" of its space`);
    const t = fields[i].type;
    if (t !== FieldType.Float && t !== FieldType.Int) bad(`attribute field "${a}" is not float or int`);
  }
  return { kind, name, fields, index, bools, boolAt };
}
function encodeJoinOK(w) {
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
function decodeJoinOK(msg) {
  const r = body(msg, MsgType.JoinOK);
  const player = r.string("player", MAX_PLAYER_ID);
  const avatar = r.uvBig("avatar");
  const fe = r.uv("frame period");
  if (fe === 0 || fe > 6e10) r.fail(`frame period ${fe}ns`);
  const history = r.uv("history");
  if (history < 2 || history > MAX_HISTORY) r.fail(`history ${history}, want 2 to ${MAX_HISTORY}`);
  const dims = r.uv("dims");
  if (dims === 0 || dims > MAX_DIMS) r.fail(`${dims} dimensions`);
  const space = [];
  for (let i = 0; i < dims; i++) space.push(r.string("attribute", MAX_NAME));
  const nk = r.uv("kinds");
  if (nk === 0 || nk > MAX_KINDS) r.fail(`${nk} kinds`);
  space.forEach((n, i) => {
    if (badName.test(n)) r.fail(`world: attribute ${i} has an invalid name "${n}"`);
    if (space.indexOf(n) !== i) r.fail(`world: attribute "${n}" named twice`);
  });
  const kinds = [];
  const dv = new DataView(msg.buffer, msg.byteOffset, msg.byteLength);
  for (let k = 0; k < nk; k++) {
    const name = r.string("schema name", MAX_NAME);
    const nf = r.uv("fields");
    if (nf === 0 || nf > MAX_FIELDS) r.fail(`schema "${name}" has ${nf} fields`);
    const fields = [];
    for (let i = 0; i < nf; i++) {
      const fname = r.string("field name", MAX_NAME);
      const type = r.byte("field type");
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
  const names = /* @__PURE__ */ new Set();
  for (const s of kinds) {
    if (names.has(s.name)) r.fail(`world: schema "${s.name}" registered twice`);
    names.add(s.name);
  }
  return { player, avatar, frameEveryNs: fe, history, space, kinds };
}
function idString(id) {
  return `${id >> 32n}.${id & 0xffffffffn}`;
}

// src/view.ts
var MAX_ID = (1n << 64n) - 1n;
var Obj = class {
  constructor(id, schema, raw) {
    __publicField(this, "id", id);
    __publicField(this, "schema", schema);
    __publicField(this, "raw", raw);
  }
  /** The object's kind (1, 2, ... in the schema table). */
  get kind() {
    return this.schema.kind;
  }
  /** Field i's value: a float's number, an int's number, a bool, a ref's ID (0n: none). */
  value(i) {
    const f = this.schema.fields[i];
    const v = this.raw[i];
    switch (f.type) {
      case FieldType.Float:
        return Number(v) * f.quantum;
      case FieldType.Int:
        return Number(v);
      case FieldType.Bool:
        return v !== 0n;
      default:
        return BigInt.asUintN(64, v);
    }
  }
  /** The value of the field called name (undefined: no such field). */
  get(name) {
    const i = this.schema.index.get(name);
    return i === void 0 ? void 0 : this.value(i);
  }
  /** A float or int field's value as a number (NaN: no such numeric field). */
  num(name) {
    const i = this.schema.index.get(name);
    if (i === void 0) return NaN;
    const f = this.schema.fields[i];
    return f.type === FieldType.Float ? Number(this.raw[i]) * f.quantum : Number(this.raw[i]);
  }
  /** Every field as a plain object keyed by field name. */
  fields() {
    const o = {};
    this.schema.fields.forEach((f, i) => o[f.name] = this.value(i));
    return o;
  }
};
var empty = { frame: 0n, objs: [] };
function corrupt(what) {
  throw new MalformedError(` (state): ${what}`);
}
function applyDelta(s, base, p, i, end) {
  const nf = s.fields.length;
  let lo = 0;
  let hi = 0;
  if (i < end && p[i] < 128) {
    lo = p[i++];
  } else {
    let m = 0n;
    let shift = 0n;
    for (let k = 0; ; k++) {
      if (i >= end || k >= 10) corrupt("world: corrupt delta: bad change mask");
      const b = p[i++];
      if (k === 9 && b > 1) corrupt("world: corrupt delta: bad change mask");
      m |= BigInt(b & 127) << shift;
      shift += 7n;
      if (b < 128) break;
    }
    lo = Number(m & 0xffffffffn);
    hi = Number(m >> 32n);
  }
  if (nf < 32 && (lo >>> nf !== 0 || hi !== 0) || nf >= 32 && nf < 64 && hi >>> nf - 32 !== 0) {
    corrupt(`world: corrupt delta: change mask names fields beyond the ${nf} of schema "${s.name}"`);
  }
  const v = base ? base.slice() : new BigInt64Array(nf);
  for (let f = 0; f < nf; f++) {
    if (!(f < 32 ? lo >>> f & 1 : hi >>> f - 32 & 1)) continue;
    let z;
    if (i < end && p[i] < 128) {
      const u = p[i++];
      z = BigInt(u & 1 ? -((u + 1) / 2) : u / 2);
    } else {
      let u = 0;
      let mul = 1;
      let big = null;
      let k = 0;
      for (; ; k++) {
        if (i >= end || k >= 10) corrupt(`world: corrupt delta: field "${s.fields[f].name}" truncated`);
        const b = p[i++];
        if (k === 9 && b > 1) corrupt(`world: corrupt delta: field "${s.fields[f].name}" truncated`);
        if (k < 7) {
          u += (b & 127) * mul;
          mul *= 128;
        } else {
          if (big === null) big = BigInt(u);
          big |= BigInt(b & 127) << BigInt(7 * k);
        }
        if (b < 128) break;
      }
      if (big === null) {
        z = BigInt(u % 2 ? -((u + 1) / 2) : u / 2);
      } else {
        z = BigInt.asIntN(64, big >> 1n ^ -(big & 1n));
      }
    }
    v[f] += z;
    if (s.boolAt[f] && v[f] !== 0n && v[f] !== 1n) {
      corrupt(`world: corrupt delta: bool field "${s.fields[f].name}" decodes to ${v[f]}`);
    }
  }
  return [v, i];
}
function find(objs, id, from) {
  let lo = from;
  let hi = objs.length;
  while (lo < hi) {
    const m = lo + hi >> 1;
    if (objs[m].id < id) lo = m + 1;
    else hi = m;
  }
  return lo < objs.length && objs[lo].id === id ? lo : -1;
}
var View = class {
  constructor(w) {
    __publicField(this, "hist");
    __publicField(this, "cur", empty);
    __publicField(this, "seq", 0n);
    __publicField(this, "nchanges", 0);
    __publicField(this, "kinds");
    this.kinds = w.kinds;
    this.hist = new Array(Math.max(w.history, 2)).fill(empty);
  }
  /** The newest frame applied (0: none). */
  get frame() {
    return Number(this.cur.frame);
  }
  /** The newest input the node had applied when it sent the newest frame applied. */
  get inputSeq() {
    return Number(this.seq);
  }
  /** Objects the newest State applied created or updated. */
  get changes() {
    return this.nchanges;
  }
  /** The objects in view, sorted by ID (do not modify). */
  get objects() {
    return this.cur.objs;
  }
  /** Object id, if in view. */
  lookup(id) {
    const i = find(this.cur.objs, id, 0);
    return i < 0 ? void 0 : this.cur.objs[i];
  }
  /**
   * Applies a State message (the whole message, header included) if it is
   * newer than the newest frame applied and its base is held; returns
   * whether it was applied. A malformed message throws a MalformedError
   * and changes nothing.
   */
  apply(msg) {
    if (msg.length < 2 || msg[0] !== VERSION || msg[1] !== MsgType.State) {
      throw new MalformedError(" (state): not a state message");
    }
    const r = new Reader(MsgType.State, msg, 2);
    const frame = r.uvBig("frame");
    const baseF = r.uvBig("base");
    const seq = r.uvBig("input seq");
    if (frame === 0n || baseF >= frame) r.fail(`frame ${frame} on base ${baseF}`);
    if (frame <= this.cur.frame) return false;
    const h = BigInt(this.hist.length);
    let base = empty;
    if (baseF !== 0n) {
      const b = this.hist[Number(baseF % h)];
      if (b.frame !== baseF || frame - baseF >= h) return false;
      base = b;
    }
    const objs = this.build(r, base);
    r.done();
    this.hist[Number(frame % h)] = { frame, objs };
    this.cur = this.hist[Number(frame % h)];
    this.seq = seq;
    return true;
  }
  build(r, base) {
    const p = r.p;
    const nc = r.uv("creations");
    if (nc > r.end - r.i) r.fail(`${nc} creations in ${r.end - r.i} bytes`);
    const created = [];
    let id = 0n;
    for (let k = 0; k < nc; k++) {
      const d = r.uvBig("creation id");
      const kind = r.uv("kind");
      if (k > 0 && d === 0n || d > MAX_ID - id || id + d === 0n) r.fail("creation IDs not increasing");
      id += d;
      const s = kind >= 1 && kind <= this.kinds.length ? this.kinds[kind - 1] : void 0;
      if (!s) r.fail(`object ${id} of unknown kind ${kind}`);
      const [v, end] = applyDelta(s, null, p, r.i, r.end);
      r.i = end;
      created.push(new Obj(id, s, v));
    }
    const bobjs = base.objs;
    const nu = r.uv("updates");
    if (nu > bobjs.length) r.fail(`${nu} updates of a ${bobjs.length}-object base`);
    this.nchanges = nc + nu;
    const next = bobjs.slice();
    id = 0n;
    let at = 0;
    for (let k = 0; k < nu; k++) {
      const d = r.uvBig("update id");
      if (k > 0 && d === 0n || d > MAX_ID - id) r.fail("update IDs not increasing");
      id += d;
      const i = find(bobjs, id, at);
      if (i < 0) r.fail(`update of object ${id} not in base frame ${base.frame}`);
      at = i + 1;
      const o = bobjs[i];
      const [v, end] = applyDelta(o.schema, o.raw, p, r.i, r.end);
      r.i = end;
      next[i] = new Obj(id, o.schema, v);
    }
    const nr = r.uv("removals");
    if (nr > bobjs.length) r.fail(`${nr} removals of a ${bobjs.length}-object base`);
    id = 0n;
    at = 0;
    for (let k = 0; k < nr; k++) {
      const d = r.uvBig("removal id");
      if (k > 0 && d === 0n || d > MAX_ID - id) r.fail("removal IDs not increasing");
      id += d;
      const i = find(bobjs, id, at);
      if (i < 0) r.fail(`removal of object ${id} not in base frame ${base.frame}`);
      at = i + 1;
      if (next[i] !== bobjs[i]) r.fail(`object ${id} both updated and removed`);
      next[i] = null;
    }
    const out = [];
    let j = 0;
    for (const o of next) {
      if (o === null) continue;
      while (j < created.length && created[j].id < o.id) out.push(created[j++]);
      if (j < created.length && created[j].id === o.id) r.fail(`creation of object ${o.id} already in base frame ${base.frame}`);
      out.push(o);
    }
    while (j < created.length) out.push(created[j++]);
    return out;
  }
};

// src/client.ts
function tokenBytes(t) {
  if (typeof t !== "string") return t;
  const s = t.trim().replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*$/.test(s) || s.length % 4 === 1) throw new Error("player: token is not base64url");
  const bin = atob(s + "===".slice((s.length + 3) % 4));
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}
function now() {
  return typeof performance !== "undefined" ? performance.now() : Date.now();
}
function sleep(ms) {
  return new Promise((res) => setTimeout(res, ms));
}
function dial(WS, url, first, onMessage, onClose, timeoutMs = 0) {
  return new Promise((resolve, reject) => {
    let ws;
    try {
      ws = new WS(url);
    } catch (e) {
      reject(e);
      return;
    }
    ws.binaryType = "arraybuffer";
    let joined = false;
    let gaveUp = false;
    if (timeoutMs > 0) {
      const timer = setTimeout(() => {
        if (joined) return;
        gaveUp = true;
        ws.onclose = null;
        ws.close();
        reject(new Error(`player: no joinok from ${url} in ${timeoutMs} ms`));
      }, timeoutMs);
      const done = resolve;
      resolve = (v) => {
        clearTimeout(timer);
        done(v);
      };
    }
    ws.onopen = () => ws.send(first);
    ws.onmessage = (ev) => {
      if (gaveUp) return;
      const m = new Uint8Array(ev.data);
      if (joined) {
        onMessage(ws, m);
        return;
      }
      try {
        const t = open(m);
        if (t === MsgType.State) return;
        if (t === MsgType.Error) throw decodeError(m);
        if (t !== MsgType.JoinOK) throw new MalformedError(` (${t}): expected joinok or error`);
        joined = true;
        resolve([ws, decodeJoinOK(m)]);
      } catch (e) {
        reject(e);
        ws.close();
      }
    };
    ws.onerror = () => {
      if (!joined) reject(new Error(`player: websocket to ${url} failed`));
    };
    ws.onclose = (ev) => {
      if (!joined) reject(new Error(`player: websocket to ${url} closed before joinok (${ev.code})`));
      else onClose(ws, new Error(`player: websocket closed (${ev.code} ${ev.reason})`));
    };
  });
}
function dialAvatar(WS, url, first, avatar, waitMs, onMessage, onClose) {
  return new Promise((resolve, reject) => {
    let phase = "dial";
    let sock = null;
    let welcome = null;
    let deed = null;
    const give = (e) => {
      if (phase === "done" || phase === "play") return;
      phase = "done";
      clearTimeout(timer);
      sock?.close();
      reject(e);
    };
    const timer = setTimeout(() => give(new Error(`player: node ${url} sent no state for avatar ${avatar} in ${waitMs} ms`)), waitMs);
    dial(WS, url, first, (ws, m) => {
      if (phase === "play") {
        onMessage(ws, m);
        return;
      }
      if (phase !== "wait") return;
      try {
        const t = open(m);
        if (t === MsgType.Error) throw decodeError(m);
        if (t === MsgType.Deed) {
          const tk = decodeDeed(m);
          if (tk.avatar !== avatar) throw new Error(`player: resuming avatar ${avatar}, node ${url} gave a deed for ${tk.avatar}`);
          deed = tk.bytes.slice();
          return;
        }
        if (t !== MsgType.State) return;
        phase = "play";
        clearTimeout(timer);
        resolve([ws, welcome, m, deed]);
      } catch (e) {
        give(e);
      }
    }, (ws, e) => {
      if (phase === "play") onClose(ws, e);
      else give(e);
    }).then(([ws, w]) => {
      sock = ws;
      if (phase === "done") {
        ws.close();
        return;
      }
      if (w.avatar !== avatar) {
        give(new Error(`player: resuming avatar ${avatar}, node ${url} gave ${w.avatar}`));
        return;
      }
      welcome = w;
      phase = "wait";
    }, (e) => give(e));
  });
}
var Client = class _Client {
  constructor(opts) {
    __publicField(this, "opts", opts);
    __publicField(this, "cur");
    __publicField(this, "next", null);
    __publicField(this, "seq", 0);
    __publicField(this, "echoed", 0);
    __publicField(this, "sentAt", new Float64Array(256));
    __publicField(this, "sent", new Array(256).fill(null));
    __publicField(this, "lastApplied", 0);
    __publicField(this, "closed", false);
    __publicField(this, "reconnecting", false);
    __publicField(this, "stateL", []);
    __publicField(this, "eventL", []);
    __publicField(this, "endL", []);
    /** The session's statistics. */
    __publicField(this, "stats", { states: 0, stateBytes: 0, applied: 0, inputs: 0, rtt: [], handoffs: 0, handoffGaps: [], reconnects: 0, resumes: 0 });
    __publicField(this, "WS");
    __publicField(this, "token", new Uint8Array(0));
    __publicField(this, "tk", null);
    this.WS = opts.WebSocket ?? WebSocket;
  }
  /** Joins the node at opts.url; resolves once the node accepted the player. */
  static async join(opts) {
    const c = new _Client(opts);
    await c.connect(opts.url);
    c.startIdle();
    return c;
  }
  /**
   * Takes a player's avatar back after the node it played on died, as
   * the Go client's ResumeAny does: a Rejoin (the token, the avatar's
   * deed, the avatar and seq, the last input the player saw applied)
   * to every node of
   * r.urls at once, keeping the first that sends a State — a node does
   * only once the avatar's primary is there, its backup having taken
   * over — and closing the others. It rejects when none does within
   * r.waitMs. opts (url and token are r's) sets the session's options.
   */
  static async resume(r, opts = {}) {
    const c = new _Client({ ...opts, url: r.urls[0] ?? "", token: r.token, WebSocket: r.WebSocket ?? opts.WebSocket });
    c.seq = r.seq;
    c.echoed = r.seq;
    c.tk = r.deed.slice();
    if (!await c.takeBack(r.urls, r.avatar, r.seq, r.waitMs ?? 8e3)) throw new Error(`player: no node of ${r.urls.length} holds avatar ${r.avatar}`);
    c.stats.resumes = 0;
    c.startIdle();
    return c;
  }
  startIdle() {
    const c = this;
    const idle = this.opts.idleTimeoutMs ?? 0;
    if (idle > 0) {
      const timer = setInterval(() => {
        if (c.closed) clearInterval(timer);
        else c.checkIdle();
      }, Math.max(50, Math.min(1e3, idle / 4)));
    }
  }
  /**
   * Rejoins avatar on every node of urls at once and plays on the first
   * that sends a State (closing the others): it resends the inputs after
   * seq there and reports true; false when none did within waitMs.
   */
  async takeBack(urls, avatar, seq, waitMs) {
    if (urls.length === 0) return false;
    let won = null;
    const tries = urls.map(async (url) => {
      const token = await this.freshToken(url);
      const deed = this.tk ?? new Uint8Array(0);
      const [ws, w, first, fresh] = await dialAvatar(this.WS, url, encodeRejoin({ token, deed, avatar, seq }), avatar, waitMs, (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e));
      if (won || this.closed) {
        ws.close();
        return;
      }
      this.token = token;
      if (fresh) this.tk = fresh;
      won = { ws, welcome: w, view: new View(w), node: 0, url };
      this.cur = won;
      this.next = null;
      this.lastApplied = now();
      this.handle(won, first);
      for (let q = Math.max(seq + 1, this.seq - 255); q <= this.seq; q++) {
        const b = this.sent[q % 256];
        if (b) ws.send(encodeInput(q, b));
      }
    });
    await Promise.allSettled(tries);
    if (won) this.stats.resumes++;
    return won !== null;
  }
  /**
   * Drops the connection when no State was applied for the idle timeout
   * (ClientOptions.idleTimeoutMs); a timer calls it, and tests may. It
   * returns whether it did.
   */
  checkIdle(at = now()) {
    const idle = this.opts.idleTimeoutMs ?? 0;
    if (idle <= 0 || this.closed || this.reconnecting || at - this.lastApplied <= idle) return false;
    const ws = this.cur.ws;
    ws.onclose = null;
    ws.close();
    this.onClose(ws, new Error(`player: the node fell silent: no state for ${idle} ms`));
    return true;
  }
  async freshToken(url) {
    const t = this.opts.token;
    return tokenBytes(typeof t === "function" ? await t(url) : t);
  }
  async connect(url, timeoutMs = 0) {
    this.token = await this.freshToken(url);
    const [ws, w] = await dial(this.WS, url, encodeJoin(this.token), (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e), timeoutMs);
    this.cur = { ws, welcome: w, view: new View(w), node: 0, url };
    this.tk = null;
    this.seq = 0;
    this.echoed = 0;
    this.sent.fill(null);
    this.lastApplied = now();
  }
  /** The JoinOK of the node the client plays on. */
  get welcome() {
    return this.cur.welcome;
  }
  /** What the player sees (replaced at a handoff or reconnect). */
  get view() {
    return this.cur.view;
  }
  /** The ID of the node played on, as its Redirect named it (0: the node first joined). */
  get node() {
    return this.cur.node;
  }
  /** The WebSocket URL of the node played on. */
  get url() {
    return this.cur.url;
  }
  /**
   * The newest avatar deed a node gave (null before the first): what a
   * Rejoin presents to take the avatar back (Client.resume), as the Go
   * client's Deed.
   */
  get deed() {
    return this.tk ? this.tk.slice() : null;
  }
  /** The newest input seq sent. */
  get inputSeq() {
    return this.seq;
  }
  /** The last input the node applied (echoed in a State): where Client.resume picks up, as the Go client's LastApplied. */
  get appliedSeq() {
    return this.echoed;
  }
  /** Calls fn after every State applied. */
  onState(fn) {
    this.stateL.push(fn);
  }
  /** Calls fn with a line saying what happened (redirects, reconnects). */
  onEvent(fn) {
    this.eventL.push(fn);
  }
  /** Calls fn when the session ends for good (null: the player left). */
  onEnd(fn) {
    this.endL.push(fn);
  }
  event(s) {
    for (const f of this.eventL) f(s);
  }
  /** Sends one game input (at most MAX_INPUT bytes); returns its seq. */
  input(b) {
    if (b.length > MAX_INPUT) throw new RangeError(`player: a ${b.length}-byte input (limit ${MAX_INPUT})`);
    if (this.closed) return 0;
    this.seq++;
    const k = this.seq % 256;
    this.sentAt[k] = now();
    this.sent[k] = b.slice();
    this.stats.inputs++;
    const to = this.next ?? this.cur;
    if (to.ws.readyState === 1) to.ws.send(encodeInput(this.seq, b));
    return this.seq;
  }
  /** When input seq was sent (performance.now() ms; 0: unknown). */
  sentTime(seq) {
    return seq > 0 && seq > this.seq - 256 ? this.sentAt[seq % 256] : 0;
  }
  /** Leaves the node(s) and closes the connections. */
  leave() {
    if (this.closed) return;
    this.closed = true;
    for (const l of [this.cur, this.next]) {
      if (!l) continue;
      try {
        if (l.ws.readyState === 1) l.ws.send(encodeLeave());
      } catch {
      }
      l.ws.close();
    }
    for (const f of this.endL) f(null);
  }
  fail(e) {
    if (this.closed) return;
    this.closed = true;
    for (const l of [this.cur, this.next]) l?.ws.close();
    for (const f of this.endL) f(e);
  }
  leg(ws) {
    if (this.cur && this.cur.ws === ws) return this.cur;
    if (this.next && this.next.ws === ws) return this.next;
    return null;
  }
  onMessage(ws, m) {
    const l = this.leg(ws);
    if (!l || this.closed) return;
    try {
      this.handle(l, m);
    } catch (e) {
      this.fail(e);
    }
  }
  onClose(ws, e) {
    const l = this.leg(ws);
    if (!l || this.closed) return;
    if (l === this.next) {
      this.next = null;
      this.event(`handoff to node ${l.node} failed: ${e.message}`);
      return;
    }
    const retry = this.opts.reconnect ?? typeof this.opts.token === "function";
    if (!retry) {
      this.fail(e);
      return;
    }
    void this.reconnect(e);
  }
  async reconnect(why) {
    if (this.reconnecting) return;
    this.reconnecting = true;
    let delay = this.opts.backoffMs ?? 250;
    const maxDelay = this.opts.maxBackoffMs ?? 8e3;
    const tries = this.opts.maxRetries ?? 8;
    let last = why;
    if (this.opts.resume && typeof this.opts.token === "function" && this.cur) {
      const lost = this.cur;
      const avatar = lost.welcome.avatar;
      const seq = this.echoed;
      this.event(`connection lost (${why.message}); joining ${lost.url} again`);
      try {
        await this.connect(lost.url, 3e3);
        this.stats.reconnects++;
        this.reconnecting = false;
        this.event(`reconnected to ${this.cur.url}`);
        return;
      } catch (e) {
        last = e;
        this.cur = lost;
      }
      const up = last instanceof RefusedError;
      const until = now() + (this.opts.resumeForMs ?? 12e3);
      if (!up) this.event(`${lost.url}: ${last.message}; looking for avatar ${avatar} on the other nodes`);
      while (!up && !this.closed && now() < until) {
        let urls = [];
        try {
          const r = this.opts.resume;
          urls = (typeof r === "function" ? await r() : r).filter((u) => u !== lost.url);
        } catch (e) {
          last = e;
        }
        if (urls.length === 0) break;
        if (await this.takeBack(urls, avatar, seq, Math.max(1e3, Math.min(8e3, until - now())))) {
          this.reconnecting = false;
          this.event(`took avatar ${avatar} back on ${this.cur.url}`);
          return;
        }
        await sleep(500);
      }
    }
    for (let k = 0; k < tries && !this.closed; k++) {
      this.event(`connection lost (${last.message}); reconnecting in ${Math.round(delay)} ms`);
      await sleep(delay * (0.75 + Math.random() / 2));
      try {
        await this.connect(this.cur.url);
        this.stats.reconnects++;
        this.reconnecting = false;
        this.event(`reconnected to ${this.cur.url}`);
        return;
      } catch (e) {
        last = e;
        if (e instanceof RefusedError && e.code !== Code.Shutdown && e.code !== Code.Full && e.code !== Code.Duplicate) break;
        delay = Math.min(maxDelay, delay * 2);
      }
    }
    this.reconnecting = false;
    this.fail(last);
  }
  handle(l, m) {
    const t = open(m);
    switch (t) {
      case MsgType.Error:
        throw decodeError(m);
      case MsgType.Redirect:
        void this.follow(decodeRedirect(m));
        return;
      case MsgType.Deed: {
        const tk = decodeDeed(m);
        if (tk.avatar !== l.welcome.avatar || tk.player !== l.welcome.player) {
          throw new MalformedError(` (deed): deed for avatar ${tk.avatar} of "${tk.player}", playing ${l.welcome.avatar} as "${l.welcome.player}"`);
        }
        this.tk = tk.bytes.slice();
        return;
      }
      case MsgType.State:
        break;
      default:
        throw new MalformedError(` (${t}): not a node message after joinok`);
    }
    this.stats.states++;
    this.stats.stateBytes += m.length;
    if (!l.view.apply(m)) return;
    const t1 = now();
    if (l === this.next) {
      this.stats.handoffGaps.push(t1 - this.lastApplied);
      const old = this.cur;
      this.cur = l;
      this.next = null;
      try {
        if (old.ws.readyState === 1) old.ws.send(encodeLeave());
      } catch {
      }
      old.ws.close();
      this.event(`now on node ${l.node}`);
    } else if (l !== this.cur) {
      l.ws.send(encodeAck(l.view.frame));
      return;
    }
    this.lastApplied = t1;
    this.stats.applied++;
    const s = l.view.inputSeq;
    if (s > this.echoed && s <= this.seq) {
      for (let q = Math.max(this.echoed + 1, s - 255); q <= s; q++) this.stats.rtt.push(t1 - this.sentAt[q % 256]);
      if (this.stats.rtt.length > 4096) this.stats.rtt.splice(0, this.stats.rtt.length - 4096);
      this.echoed = s;
    }
    l.ws.send(encodeAck(l.view.frame));
    for (const f of this.stateL) f(this);
  }
  /** Follows a Redirect: rejoin there, resend the inputs the old node did not apply. */
  async follow(r) {
    if (this.next || r.avatar !== this.cur.welcome.avatar) {
      this.fail(new Error(`player: redirect to node ${r.node} for avatar ${r.avatar} while playing ${this.cur.welcome.avatar}, handed off already: ${this.next !== null}`));
      return;
    }
    if (!r.ws) {
      this.fail(new Error(`player: redirected to node ${r.node}, which has no WebSocket endpoint`));
      return;
    }
    this.event(`redirected to node ${r.node} (${r.ws})`);
    let ws;
    let w;
    try {
      [ws, w] = await dial(this.WS, r.ws, encodeRejoin({ token: this.token, deed: this.tk ?? new Uint8Array(0), avatar: r.avatar, seq: r.seq }), (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e));
    } catch (e) {
      this.fail(new Error(`player: following the redirect to node ${r.node}: ${e.message}`));
      return;
    }
    if (this.closed) {
      ws.close();
      return;
    }
    if (w.avatar !== r.avatar) {
      ws.close();
      this.fail(new Error(`player: node ${r.node} gave avatar ${w.avatar}, not the redirected ${r.avatar}`));
      return;
    }
    this.next = { ws, welcome: w, view: new View(w), node: r.node, url: r.ws };
    this.stats.handoffs++;
    for (let q = Math.max(r.seq + 1, this.seq - 255); q <= this.seq; q++) {
      const b = this.sent[q % 256];
      if (b) ws.send(encodeInput(q, b));
    }
  }
};
function quantile(xs, q) {
  if (xs.length === 0) return 0;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

// src/arena.ts
var RUN_SPEED = 10;
var VEL_QUANTUM = 1 / 8;
function encodeArenaInput(inp) {
  const b = new Uint8Array(7);
  const dv = new DataView(b.buffer);
  const q = (v) => Math.trunc(Math.max(-RUN_SPEED, Math.min(RUN_SPEED, v)) / VEL_QUANTUM);
  let turns = inp.aim / (2 * Math.PI) % 1;
  if (turns < 0) turns++;
  b[0] = inp.fire ? 1 : 0;
  dv.setInt16(1, q(inp.vx), false);
  dv.setInt16(3, q(inp.vy), false);
  dv.setUint16(5, Math.trunc(turns * 65536) & 65535, false);
  return b;
}
var ArenaKind = { Bot: "arena.bot", Missile: "arena.missile", Item: "arena.item" };
function isPlayerAvatar(o) {
  return o.schema.name === ArenaKind.Bot && o.num("goal") === -1;
}
export {
  ArenaKind,
  Client,
  Code,
  FieldType,
  MAX_CLIENT_MESSAGE,
  MAX_DEED,
  MAX_DIMS,
  MAX_FIELDS,
  MAX_HISTORY,
  MAX_INPUT,
  MAX_MESSAGE,
  MAX_PLAYER_ID,
  MAX_TOKEN,
  MAX_WORLD,
  MalformedError,
  MsgType,
  Obj,
  RUN_SPEED,
  Reader,
  RefusedError,
  VERSION,
  View,
  Writer,
  applyDelta,
  codeName,
  decodeAck,
  decodeDeed,
  decodeError,
  decodeInput,
  decodeJoin,
  decodeJoinOK,
  decodeLeave,
  decodeRedirect,
  decodeRejoin,
  encodeAck,
  encodeArenaInput,
  encodeDeed,
  encodeError,
  encodeInput,
  encodeJoin,
  encodeJoinOK,
  encodeLeave,
  encodeRedirect,
  encodeRejoin,
  idString,
  isPlayerAvatar,
  makeSchema,
  msgName,
  open,
  quantile,
  tokenBytes
};

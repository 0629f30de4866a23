// The client's reconstruction of what its player sees, from State
// messages: the inverse of the Go package live/player's Encoder, with the
// same checks as its View.

import { FieldType, MalformedError, MsgType, Reader, VERSION, type Schema, type Welcome } from "./proto";

const MAX_ID = (1n << 64n) - 1n;

/** One object in view: its ID, kind and quantised state (immutable). */
export class Obj {
  constructor(
    readonly id: bigint,
    readonly schema: Schema,
    /** The raw field values (int64), in field order. */
    readonly raw: BigInt64Array,
  ) {}

  /** The object's kind (1, 2, ... in the schema table). */
  get kind(): number {
    return this.schema.kind;
  }

  /** Field i's value: a float's number, an int's number, a bool, a ref's ID (0n: none). */
  value(i: number): number | boolean | bigint {
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
  get(name: string): number | boolean | bigint | undefined {
    const i = this.schema.index.get(name);
    return i === undefined ? undefined : this.value(i);
  }

  /** A float or int field's value as a number (NaN: no such numeric field). */
  num(name: string): number {
    const i = this.schema.index.get(name);
    if (i === undefined) return NaN;
    const f = this.schema.fields[i];
    return f.type === FieldType.Float ? Number(this.raw[i]) * f.quantum : Number(this.raw[i]);
  }

  /** Every field as a plain object keyed by field name. */
  fields(): Record<string, number | boolean | bigint> {
    const o: Record<string, number | boolean | bigint> = {};
    this.schema.fields.forEach((f, i) => (o[f.name] = this.value(i)));
    return o;
  }
}

/** What one applied State told the player: its objects sorted by ID. */
interface Snapshot {
  frame: bigint;
  objs: Obj[];
}

const empty: Snapshot = { frame: 0n, objs: [] };

function corrupt(what: string): never {
  throw new MalformedError(` (state): ${what}`);
}

/**
 * Decodes one delta (world.AppendDelta) from p at i against base (null:
 * the zero state) into a new value array; returns it and the end offset.
 * Varints here are read as Go's binary.Uvarint reads them.
 */
export function applyDelta(s: Schema, base: BigInt64Array | null, p: Uint8Array, i: number, end: number): [BigInt64Array, number] {
  const nf = s.fields.length;
  // The change mask, split into two 32-bit halves.
  let lo = 0;
  let hi = 0;
  if (i < end && p[i] < 0x80) {
    lo = p[i++];
  } else {
    let m = 0n;
    let shift = 0n;
    for (let k = 0; ; k++) {
      if (i >= end || k >= 10) corrupt("world: corrupt delta: bad change mask");
      const b = p[i++];
      if (k === 9 && b > 1) corrupt("world: corrupt delta: bad change mask");
      m |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (b < 0x80) break;
    }
    lo = Number(m & 0xffffffffn);
    hi = Number(m >> 32n);
  }
  if ((nf < 32 && (lo >>> nf !== 0 || hi !== 0)) || (nf >= 32 && nf < 64 && hi >>> (nf - 32) !== 0)) {
    corrupt(`world: corrupt delta: change mask names fields beyond the ${nf} of schema "${s.name}"`);
  }
  const v = base ? base.slice() : new BigInt64Array(nf);
  for (let f = 0; f < nf; f++) {
    if (!(f < 32 ? (lo >>> f) & 1 : (hi >>> (f - 32)) & 1)) continue;
    let z: bigint;
    if (i < end && p[i] < 0x80) {
      const u = p[i++];
      z = BigInt(u & 1 ? -((u + 1) / 2) : u / 2);
    } else {
      let u = 0;
      let mul = 1;
      let big: bigint | null = null;
      let k = 0;
      for (; ; k++) {
        if (i >= end || k >= 10) corrupt(`world: corrupt delta: field "${s.fields[f].name}" truncated`);
        const b = p[i++];
        if (k === 9 && b > 1) corrupt(`world: corrupt delta: field "${s.fields[f].name}" truncated`);
        if (k < 7) {
          u += (b & 0x7f) * mul;
          mul *= 128;
        } else {
          if (big === null) big = BigInt(u);
          big |= BigInt(b & 0x7f) << BigInt(7 * k);
        }
        if (b < 0x80) break;
      }
      if (big === null) {
        z = BigInt(u % 2 ? -((u + 1) / 2) : u / 2);
      } else {
        z = BigInt.asIntN(64, (big >> 1n) ^ -(big & 1n));
      }
    }
    v[f] += z; // a BigInt64Array wraps as Go's int64 does
    if (s.boolAt[f] && v[f] !== 0n && v[f] !== 1n) {
      corrupt(`world: corrupt delta: bool field "${s.fields[f].name}" decodes to ${v[f]}`);
    }
  }
  return [v, i];
}

function find(objs: Obj[], id: bigint, from: number): number {
  let lo = from;
  let hi = objs.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (objs[m].id < id) lo = m + 1;
    else hi = m;
  }
  return lo < objs.length && objs[lo].id === id ? lo : -1;
}

/**
 * View is a client's reconstruction of what its player sees from State
 * messages: the objects of the newest frame applied, and the snapshots of
 * recent frames that later messages may be encoded against.
 */
export class View {
  private hist: Snapshot[];
  private cur: Snapshot = empty;
  private seq = 0n;
  private nchanges = 0;
  readonly kinds: Schema[];

  constructor(w: Pick<Welcome, "kinds" | "history">) {
    this.kinds = w.kinds;
    this.hist = new Array(Math.max(w.history, 2)).fill(empty);
  }

  /** The newest frame applied (0: none). */
  get frame(): number {
    return Number(this.cur.frame);
  }
  /** The newest input the node had applied when it sent the newest frame applied. */
  get inputSeq(): number {
    return Number(this.seq);
  }
  /** Objects the newest State applied created or updated. */
  get changes(): number {
    return this.nchanges;
  }
  /** The objects in view, sorted by ID (do not modify). */
  get objects(): readonly Obj[] {
    return this.cur.objs;
  }
  /** Object id, if in view. */
  lookup(id: bigint): Obj | undefined {
    const i = find(this.cur.objs, id, 0);
    return i < 0 ? undefined : this.cur.objs[i];
  }

  /**
   * Applies a State message (the whole message, header included) if it is
   * newer than the newest frame applied and its base is held; returns
   * whether it was applied. A malformed message throws a MalformedError
   * and changes nothing.
   */
  apply(msg: Uint8Array): boolean {
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
      if (b.frame !== baseF || frame - baseF >= h) return false; // a base no longer held
      base = b;
    }
    const objs = this.build(r, base);
    r.done();
    this.hist[Number(frame % h)] = { frame, objs };
    this.cur = this.hist[Number(frame % h)];
    this.seq = seq;
    return true;
  }

  private build(r: Reader, base: Snapshot): Obj[] {
    const p = r.p;
    const nc = r.uv("creations");
    if (nc > r.end - r.i) r.fail(`${nc} creations in ${r.end - r.i} bytes`);
    const created: Obj[] = [];
    let id = 0n;
    for (let k = 0; k < nc; k++) {
      const d = r.uvBig("creation id");
      const kind = r.uv("kind");
      if ((k > 0 && d === 0n) || d > MAX_ID - id || id + d === 0n) r.fail("creation IDs not increasing");
      id += d;
      const s = kind >= 1 && kind <= this.kinds.length ? this.kinds[kind - 1] : undefined;
      if (!s) r.fail(`object ${id} of unknown kind ${kind}`);
      const [v, end] = applyDelta(s, null, p, r.i, r.end);
      r.i = end;
      created.push(new Obj(id, s, v));
    }
    const bobjs = base.objs;
    const nu = r.uv("updates");
    if (nu > bobjs.length) r.fail(`${nu} updates of a ${bobjs.length}-object base`);
    this.nchanges = nc + nu;
    const next: (Obj | null)[] = bobjs.slice();
    id = 0n;
    let at = 0;
    for (let k = 0; k < nu; k++) {
      const d = r.uvBig("update id");
      if ((k > 0 && d === 0n) || d > MAX_ID - id) r.fail("update IDs not increasing");
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
      if ((k > 0 && d === 0n) || d > MAX_ID - id) r.fail("removal IDs not increasing");
      id += d;
      const i = find(bobjs, id, at);
      if (i < 0) r.fail(`removal of object ${id} not in base frame ${base.frame}`);
      at = i + 1;
      if (next[i] !== bobjs[i]) r.fail(`object ${id} both updated and removed`);
      next[i] = null;
    }
    // Merge what is left of the base with the creations, by ID.
    const out: Obj[] = [];
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
}

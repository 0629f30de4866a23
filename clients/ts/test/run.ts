// The TypeScript side of the shared test vectors (testdata/vectors.json,
// written by the Go tests): decode every message and compare with the
// fields Go recorded, encode every message from those fields and compare
// with Go's bytes, replay Go's seeded State streams and compare every
// view, and agree with Go's verdict on every malformed message. The same
// code runs under goja (go test) and in Chromium.

import * as ow from "../src/index";

interface Vec {
  name: string;
  type: string;
  hex: string;
  fields: any;
}
interface Stream {
  name: string;
  joinok: string;
  states: string[];
  /** Per state: applied or not, then the view after it (id, kind, raw values). */
  applied: boolean[];
  views: [string, number, string[]][][];
}
interface Bad {
  name: string;
  /** For a state: the name of the JoinOK vector, and of the State vectors applied first. */
  joinok?: string;
  before?: string[];
  hex: string;
  /** Go's verdict: "ok", "error", or for a state "ignored". */
  verdict: string;
}
interface Vectors {
  messages: Vec[];
  streams: Stream[];
  malformed: Bad[];
}

export function hex(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += (x < 16 ? "0" : "") + x.toString(16);
  return s;
}

export function unhex(s: string): Uint8Array {
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
  return b;
}

function welcomeFields(w: ow.Welcome) {
  return {
    player: w.player,
    avatar: w.avatar.toString(),
    frameEveryNs: w.frameEveryNs,
    history: w.history,
    space: w.space,
    kinds: w.kinds.map((k) => ({ name: k.name, fields: k.fields.map((f) => ({ name: f.name, type: f.type, quantum: f.quantum })) })),
  };
}

function viewOf(v: ow.View): [string, number, string[]][] {
  return v.objects.map((o) => [o.id.toString(), o.kind, Array.from(o.raw, (x) => x.toString())]);
}

/** JSON with every object's keys sorted (Go writes maps sorted). */
function canon(a: unknown): string {
  return JSON.stringify(a, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) : v,
  );
}

function same(a: unknown, b: unknown): boolean {
  return canon(a) === canon(b);
}

/** What a decoder makes of message m of type t, as JSON-able fields. */
function decode(t: string, m: Uint8Array): unknown {
  switch (t) {
    case "join":
      return { token: hex(ow.decodeJoin(m)) };
    case "joinok":
      return welcomeFields(ow.decodeJoinOK(m));
    case "input": {
      const x = ow.decodeInput(m);
      return { seq: x.seq, input: hex(x.input) };
    }
    case "ack":
      return { frame: ow.decodeAck(m) };
    case "leave":
      ow.decodeLeave(m);
      return {};
    case "error": {
      const e = ow.decodeError(m);
      return { code: e.code, text: e.text };
    }
    case "redirect": {
      const r = ow.decodeRedirect(m);
      return { node: r.node, quic: r.quic, ws: r.ws, avatar: r.avatar.toString(), seq: r.seq };
    }
    case "rejoin": {
      const r = ow.decodeRejoin(m);
      return { token: hex(r.token), deed: hex(r.deed), avatar: r.avatar.toString(), seq: r.seq };
    }
    case "deed": {
      const k = ow.decodeDeed(m);
      return { deed: hex(k.bytes), avatar: k.avatar.toString(), player: k.player, world: k.world, issued: k.issued, expires: k.expires };
    }
  }
  throw new Error(`no decoder for ${t}`);
}

/** Message t encoded by the SDK from the fields Go recorded. */
function encode(t: string, f: any): Uint8Array | null {
  switch (t) {
    case "join":
      return ow.encodeJoin(unhex(f.token));
    case "joinok":
      return ow.encodeJoinOK({
        player: f.player,
        avatar: BigInt(f.avatar),
        frameEveryNs: f.frameEveryNs,
        history: f.history,
        space: f.space,
        kinds: f.kinds.map((k: any, i: number) => ow.makeSchema(i + 1, k.name, f.space, k.fields)),
      });
    case "input":
      return ow.encodeInput(f.seq, unhex(f.input));
    case "ack":
      return ow.encodeAck(f.frame);
    case "leave":
      return ow.encodeLeave();
    case "error":
      return ow.encodeError(f.code, f.text);
    case "redirect":
      return ow.encodeRedirect({ node: f.node, quic: f.quic, ws: f.ws, avatar: BigInt(f.avatar), seq: f.seq });
    case "rejoin":
      return ow.encodeRejoin({ token: unhex(f.token), deed: unhex(f.deed), avatar: BigInt(f.avatar), seq: f.seq });
    case "deed":
      return ow.encodeDeed(unhex(f.deed));
    case "arena-input":
      return ow.encodeArenaInput(f);
  }
  return null; // states are made by nodes only
}

/** The report the Go tests read back. */
export interface Report {
  checked: number;
  failures: string[];
  /** Every message the SDK encoded, by vector name (hex). */
  encoded: Record<string, string>;
}

/** Checks every vector; returns the report as JSON. */
export function runVectors(json: string): string {
  const vs = JSON.parse(json) as Vectors;
  const rep: Report = { checked: 0, failures: [], encoded: {} };
  const fail = (s: string) => {
    if (rep.failures.length < 50) rep.failures.push(s);
  };
  let welcome: ow.Welcome | null = null;
  let view: ow.View | null = null;
  for (const v of vs.messages) {
    rep.checked++;
    const m = unhex(v.hex);
    try {
      if (v.type === "state") {
        if (!view) throw new Error("a state before any joinok");
        if (!view.apply(m)) throw new Error("not applied");
        const got = { frame: view.frame, seq: view.inputSeq, objects: viewOf(view) };
        if (!same(got, v.fields)) fail(`${v.name}: view ${JSON.stringify(got)}, want ${JSON.stringify(v.fields)}`);
        continue;
      }
      if (v.type !== "arena-input") {
        const got = decode(v.type, m);
        if (!same(got, v.fields)) fail(`${v.name}: decoded ${JSON.stringify(got)}, want ${JSON.stringify(v.fields)}`);
      }
      if (v.type === "joinok") {
        welcome = ow.decodeJoinOK(m);
        view = new ow.View(welcome);
      }
      const e = encode(v.type, v.fields);
      if (e) {
        rep.encoded[v.name] = hex(e);
        if (hex(e) !== v.hex) fail(`${v.name}: encoded ${hex(e)}, want ${v.hex}`);
      }
    } catch (e) {
      fail(`${v.name}: ${(e as Error).message}`);
    }
  }
  for (const s of vs.streams) {
    rep.checked++;
    try {
      const w = ow.decodeJoinOK(unhex(s.joinok));
      const v = new ow.View(w);
      s.states.forEach((h, i) => {
        const ok = v.apply(unhex(h));
        if (ok !== s.applied[i]) throw new Error(`state ${i}: applied ${ok}, want ${s.applied[i]}`);
        if (!same(viewOf(v), s.views[i])) throw new Error(`state ${i}: view ${JSON.stringify(viewOf(v))}, want ${JSON.stringify(s.views[i])}`);
      });
    } catch (e) {
      fail(`stream ${s.name}: ${(e as Error).message}`);
    }
  }
  const byName = new Map(vs.messages.map((v) => [v.name, v.hex]));
  for (const b of vs.malformed) {
    rep.checked++;
    const verdict = b.joinok !== undefined ? verdictOf(b.hex, byName.get(b.joinok)!, (b.before ?? []).map((n) => byName.get(n)!)) : verdictOf(b.hex);
    if (verdict !== b.verdict) fail(`malformed ${b.name} (${b.hex}): ${verdict}, Go says ${b.verdict}`);
  }
  return JSON.stringify(rep);
}

/**
 * What the SDK makes of message msg (hex): "error" when a decoder
 * refuses it, else "ok"; a State is applied to a view of joinok after
 * the States before, and may come out "ignored".
 */
export function verdictOf(msg: string, joinok?: string, before: string[] = []): string {
  try {
    const m = unhex(msg);
    if (joinok !== undefined) {
      const v = new ow.View(ow.decodeJoinOK(unhex(joinok)));
      for (const h of before) v.apply(unhex(h));
      return v.apply(m) ? "ok" : "ignored";
    }
    decode(ow.msgName(ow.open(m)), m);
    return "ok";
  } catch {
    return "error";
  }
}

/**
 * Decodes recorded State streams (one per player, each after its JoinOK)
 * as a client would, and returns the milliseconds taken and the objects
 * seen, as JSON. now() is the clock.
 */
export function benchDecode(joinoks: Uint8Array[], streams: Uint8Array[][], now: () => number): string {
  const t0 = now();
  let states = 0;
  let objects = 0;
  for (let p = 0; p < streams.length; p++) {
    const v = new ow.View(ow.decodeJoinOK(joinoks[p]));
    for (const m of streams[p]) {
      if (v.apply(m)) {
        states++;
        objects += v.objects.length;
      }
    }
  }
  return JSON.stringify({ ms: now() - t0, states, objects });
}

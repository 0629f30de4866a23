// The Client's handoff, step by step, over scripted WebSockets: it must
// follow a Redirect make-before-break as the Go client does. Runs under
// goja (go test) with the shared vectors' messages.

import * as ow from "../src/index";
import { hex, unhex } from "./run";

/** A WebSocket whose peer is the script: it records what the client sends. */
class ScriptedWS {
  static made: ScriptedWS[] = [];
  binaryType = "blob";
  readyState = 0;
  sent: string[] = [];
  closed = false;
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: ArrayBuffer }) => void) | null = null;
  onerror: (() => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  constructor(readonly url: string) {
    ScriptedWS.made.push(this);
  }
  send(b: Uint8Array) {
    if (this.readyState !== 1) throw new Error("send on a socket not open");
    this.sent.push(hex(b));
  }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.readyState = 3;
    this.onclose?.({ code: 1000, reason: "" });
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  deliver(h: string) {
    const b = unhex(h);
    this.onmessage?.({ data: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) });
  }
}

const clock = () => (typeof performance !== "undefined" ? performance.now() : Date.now());
const tick = () => new Promise<void>((res) => res());
async function settle() {
  for (let i = 0; i < 20; i++) await tick();
}

/** Runs the handoff script on the vectors (JSON); returns the failures as JSON. */
export async function clientScenario(json: string): Promise<string> {
  const vs = JSON.parse(json) as { messages: { name: string; hex: string; fields: any }[] };
  const v = new Map(vs.messages.map((m) => [m.name, m]));
  const fails: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) fails.push(what);
  };
  try {
    const token = unhex(v.get("join")!.fields.token);
    const p = ow.Client.join({ url: "ws://one/", token, WebSocket: ScriptedWS as unknown as typeof WebSocket, idleTimeoutMs: 5000 });
    await settle();
    const one = ScriptedWS.made[0];
    one.open();
    expect(one.sent[0] === v.get("join")!.hex, `the join sent ${one.sent[0]}`);
    one.deliver(v.get("joinok")!.hex);
    const c = await p;
    const ins = [1, 2, 3].map((k) => new Uint8Array([k]));
    for (const b of ins) c.input(b);
    expect(one.sent.length === 4 && one.sent[3] === hex(ow.encodeInput(3, ins[2])), `inputs on node one: ${one.sent}`);
    one.deliver(v.get("state-1")!.hex);
    expect(one.sent[4] === hex(ow.encodeAck(1)), `the ack of state 1: ${one.sent[4]}`);
    // Redirect: avatar 1.5 to node 2 (ws://10.0.0.2:7102/play), seq 2 applied.
    one.deliver(v.get("redirect")!.hex);
    await settle();
    const two = ScriptedWS.made[1];
    expect(two !== undefined && two.url === "ws://10.0.0.2:7102/play", `dialled ${two?.url}`);
    two.open();
    expect(two.sent[0] === hex(ow.encodeRejoin({ token, avatar: c.welcome.avatar, seq: 2 })), `the rejoin sent ${two.sent[0]}`);
    two.deliver(v.get("joinok")!.hex);
    await settle();
    expect(two.sent[1] === hex(ow.encodeInput(3, ins[2])) && two.sent.length === 2, `inputs resent to node two: ${two.sent}`);
    c.input(new Uint8Array([4])); // during the handoff: to the new node only
    expect(two.sent[2] === hex(ow.encodeInput(4, new Uint8Array([4]))), `input 4 went to ${two.sent.length > 2 ? "two" : "one"}`);
    expect(one.sent.length === 5 && !one.closed, `node one got ${one.sent.length - 5} more messages, closed ${one.closed}`);
    // Node one's States still apply until node two's first one.
    one.deliver(v.get("state-2")!.hex);
    expect(c.view.frame === 2 && c.node === 0 && one.sent[5] === hex(ow.encodeAck(2)), `before the switch: frame ${c.view.frame}, node ${c.node}`);
    two.deliver(v.get("state-1")!.hex);
    expect(c.node === 2 && c.view.frame === 1 && c.stats.handoffs === 1, `after the switch: node ${c.node}, frame ${c.view.frame}`);
    expect(two.sent[3] === hex(ow.encodeAck(1)), `node two's ack: ${two.sent[3]}`);
    expect(one.sent[6] === hex(ow.encodeLeave()) && one.closed, `node one left: ${one.sent[6]}, closed ${one.closed}`);
    expect(c.stats.rtt.length === 1, `echo times measured: ${c.stats.rtt.length}, want 1 (input 1, echoed by state 2)`);
    // Silence: past the idle timeout the connection is dropped and, with
    // no way to a fresh token, the session ends.
    expect(!c.checkIdle(clock() + 1000), "idle after 1 s with a 5 s timeout");
    let silent: Error | null | undefined;
    c.onEnd((e) => (silent = e));
    expect(c.checkIdle(clock() + 6000) && two.closed, "not dropped after 6 s of silence");
    expect(silent instanceof Error && /fell silent/.test(silent.message), `the silent session ended with ${silent}`);
    // An Error ends a session.
    const p2 = ow.Client.join({ url: "ws://three/", token, WebSocket: ScriptedWS as unknown as typeof WebSocket });
    await settle();
    const three = ScriptedWS.made[2];
    three.open();
    three.deliver(v.get("joinok")!.hex);
    const c2 = await p2;
    let ended: Error | null | undefined;
    c2.onEnd((e) => (ended = e));
    three.deliver(v.get("error")!.hex);
    expect(ended instanceof ow.RefusedError && (ended as ow.RefusedError).code === ow.Code.Full, `the session ended with ${ended}`);
    expect(three.closed, "node three's socket is still open after its error");
  } catch (e) {
    fails.push(`threw ${(e as Error).stack ?? e}`);
  }
  return JSON.stringify(fails);
}

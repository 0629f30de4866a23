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
    expect(c.deed === null, "a deed before the node sent one");
    one.deliver(v.get("deed")!.hex);
    const deed = unhex(v.get("deed")!.fields.deed);
    expect(c.deed !== null && hex(c.deed) === hex(deed), `the deed kept: ${c.deed && hex(c.deed)}`);
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
    expect(two.sent[0] === v.get("rejoin")!.hex, `the rejoin sent ${two.sent[0]}, want the vector's (the token, the deed, avatar 1.5, seq 2)`);
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

/**
 * Runs the resume script on the vectors (JSON): a node dies, and the
 * client takes its avatar back on the peer its backup took over on, as
 * the Go client's ResumeAny does; then Client.resume on its own. Returns
 * the failures as JSON.
 */
export async function resumeScenario(json: string): Promise<string> {
  const vs = JSON.parse(json) as { messages: { name: string; hex: string; fields: any }[] };
  const v = new Map(vs.messages.map((m) => [m.name, m]));
  const fails: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) fails.push(what);
  };
  try {
    ScriptedWS.made = [];
    const token = unhex(v.get("join")!.fields.token);
    const asked: string[] = [];
    const WS = ScriptedWS as unknown as typeof WebSocket;
    const p = ow.Client.join({
      url: "ws://one/",
      token: async (url) => (asked.push(url), token),
      WebSocket: WS,
      resume: async () => ["ws://one/", "ws://two/", "ws://three/"],
    });
    await settle();
    const one = ScriptedWS.made[0];
    one.open();
    one.deliver(v.get("joinok")!.hex);
    const c = await p;
    const avatar = c.welcome.avatar;
    one.deliver(v.get("deed")!.hex);
    const deed = unhex(v.get("deed")!.fields.deed);
    const ins = [1, 2, 3].map((k) => new Uint8Array([k]));
    for (const b of ins) c.input(b);
    one.deliver(v.get("state-1")!.hex);
    one.deliver(v.get("state-2")!.hex); // input 1 applied
    expect(c.appliedSeq === 1 && c.inputSeq === 3, `applied seq ${c.appliedSeq}, sent ${c.inputSeq}`);
    const events: string[] = [];
    c.onEvent((e) => events.push(e));
    // Node one dies: its connection closes, and a new one is refused.
    one.close();
    await settle();
    const again = ScriptedWS.made[1];
    expect(ScriptedWS.made.length === 2 && again?.url === "ws://one/", `dialled ${ScriptedWS.made.slice(1).map((w) => w.url)}, want node one again first`);
    again.close(); // refused
    await settle();
    const [two, three] = [ScriptedWS.made[2], ScriptedWS.made[3]];
    expect(ScriptedWS.made.length === 4 && two?.url === "ws://two/" && three?.url === "ws://three/", `dialled ${ScriptedWS.made.slice(2).map((w) => w.url)}, want two and three (not the dead one)`);
    expect(asked.join(",") === "ws://one/,ws://one/,ws://two/,ws://three/", `tokens asked for ${asked}`);
    two.open();
    three.open();
    const rejoin = hex(ow.encodeRejoin({ token, deed, avatar, seq: 1 }));
    expect(two.sent[0] === rejoin && three.sent[0] === rejoin, `the rejoins sent: ${two.sent[0]}, ${three.sent[0]}; want ${rejoin} (seq 1: the last input applied)`);
    two.deliver(v.get("joinok")!.hex);
    three.deliver(v.get("joinok")!.hex);
    await settle();
    two.deliver(v.get("deed")!.hex); // node two's own, once the avatar is there
    c.input(new Uint8Array([4])); // while looking: kept, sent where the avatar is
    expect(two.sent.length === 1 && three.sent.length === 1, `sent before a state: ${two.sent.length - 1}, ${three.sent.length - 1} more messages`);
    three.deliver(v.get("error-avatar-gone")!.hex); // not there
    await settle();
    expect(three.closed, "node three's socket is open after its error");
    expect(c.stats.resumes === 0 && c.url === "ws://one/", `resumed on ${c.url} before any state`);
    two.deliver(v.get("state-1")!.hex); // the avatar is on node two
    await settle();
    expect(c.stats.resumes === 1 && c.url === "ws://two/" && c.welcome.avatar === avatar, `after node two's state: resumes ${c.stats.resumes}, on ${c.url}, avatar ${c.welcome.avatar}`);
    expect(c.view.frame === 1 && c.view.lookup(avatar)?.num("x") === 10.5, `the view after the resume: frame ${c.view.frame}`);
    const want = [rejoin, hex(ow.encodeAck(1)), ...[2, 3, 4].map((q) => hex(ow.encodeInput(q, new Uint8Array([q]))))];
    expect(two.sent.join() === want.join(), `node two got ${two.sent}, want the rejoin, the ack and inputs 2 to 4 again`);
    expect(c.stats.reconnects === 0 && events.some((e) => /took avatar .* back on ws:\/\/two\//.test(e)), `events ${events}`);
    c.input(new Uint8Array([5]));
    expect(two.sent[5] === hex(ow.encodeInput(5, new Uint8Array([5]))), `input 5 went ${two.sent[5]}`);
    c.leave();

    // A node that is up, the connection alone lost: the client joins it
    // again at once (a fresh avatar), without looking on the others.
    ScriptedWS.made = [];
    const p1 = ow.Client.join({ url: "ws://seven/", token: async () => token, WebSocket: WS, resume: ["ws://eight/"] });
    await settle();
    ScriptedWS.made[0].open();
    ScriptedWS.made[0].deliver(v.get("joinok")!.hex);
    const c1 = await p1;
    ScriptedWS.made[0].close();
    await settle();
    const back = ScriptedWS.made[1];
    back.open();
    expect(back.url === "ws://seven/" && back.sent[0] === v.get("join")!.hex, `after a lost connection: ${back.url} got ${back.sent[0]}`);
    back.deliver(v.get("joinok")!.hex);
    await settle();
    expect(c1.stats.reconnects === 1 && c1.stats.resumes === 0 && ScriptedWS.made.length === 2, `reconnects ${c1.stats.reconnects}, resumes ${c1.stats.resumes}, ${ScriptedWS.made.length} sockets`);
    c1.leave();

    // A node that refuses the new connection is up: the avatar did not
    // fail over, and the client does not look for it elsewhere.
    ScriptedWS.made = [];
    const p0 = ow.Client.join({ url: "ws://nine/", token: async () => token, WebSocket: WS, resume: ["ws://ten/"] });
    await settle();
    ScriptedWS.made[0].open();
    ScriptedWS.made[0].deliver(v.get("joinok")!.hex);
    const c0 = await p0;
    ScriptedWS.made[0].close();
    await settle();
    ScriptedWS.made[1].open();
    ScriptedWS.made[1].deliver(v.get("error")!.hex); // full
    await settle();
    expect(ScriptedWS.made.length === 2 && c0.stats.resumes === 0, `after a refusal: dialled ${ScriptedWS.made.map((w) => w.url)}`);
    c0.leave();

    // Client.resume on its own: the first node says the avatar is not
    // there, the second sends its state.
    ScriptedWS.made = [];
    const p2 = ow.Client.resume({ urls: ["ws://four/", "ws://five/"], token, deed, avatar, seq: 2, WebSocket: WS });
    await settle();
    const [four, five] = ScriptedWS.made;
    four.open();
    five.open();
    const rejoin2 = v.get("rejoin")!.hex;
    expect(four.sent[0] === rejoin2 && five.sent[0] === rejoin2, `Client.resume's rejoins: ${four.sent[0]}, ${five.sent[0]}`);
    four.deliver(v.get("joinok")!.hex);
    five.deliver(v.get("joinok")!.hex);
    await settle();
    four.deliver(v.get("error-avatar-gone")!.hex);
    five.deliver(v.get("state-1")!.hex);
    const c2 = await p2;
    expect(c2.url === "ws://five/" && c2.inputSeq === 2 && c2.view.frame === 1 && four.closed, `Client.resume: on ${c2.url}, seq ${c2.inputSeq}, frame ${c2.view.frame}`);
    c2.input(new Uint8Array([9]));
    expect(five.sent[2] === hex(ow.encodeInput(3, new Uint8Array([9]))), `the next input after resuming at seq 2: ${five.sent[2]}`);
    c2.leave();

    // No node has it: Client.resume rejects.
    ScriptedWS.made = [];
    const p3 = ow.Client.resume({ urls: ["ws://six/"], token, deed, avatar, seq: 0, WebSocket: WS });
    await settle();
    ScriptedWS.made[0].open();
    ScriptedWS.made[0].deliver(v.get("joinok")!.hex);
    await settle();
    ScriptedWS.made[0].deliver(v.get("error-avatar-gone")!.hex);
    let rejected: Error | null = null;
    await p3.catch((e) => (rejected = e));
    expect(rejected !== null && /no node of 1 holds avatar/.test((rejected as Error).message), `Client.resume with no node holding the avatar: ${rejected}`);
  } catch (e) {
    fails.push(`threw ${(e as Error).stack ?? e}`);
  }
  return JSON.stringify(fails);
}

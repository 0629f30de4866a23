// A player's connection to overworld nodes over WebSocket: join with a
// token, keep the View from State messages and acknowledge them, send
// inputs, follow a node's Redirect make-before-break, take the avatar back
// where it failed over when its node dies (Resume), and reconnect with
// backoff when the connection drops.

import {
  MsgType,
  RefusedError,
  type Redirect,
  type Welcome,
  Code,
  MalformedError,
  decodeError,
  decodeJoinOK,
  decodeRedirect,
  decodeDeed,
  encodeAck,
  encodeInput,
  encodeJoin,
  encodeLeave,
  encodeRejoin,
  open,
  MAX_INPUT,
} from "./proto";
import { View } from "./view";

/** A token: the printed form (base64url, as `overworld token issue` prints it) or its bytes. */
export type Token = string | Uint8Array;

/** Decodes a printed token (base64url without padding; white space ignored). */
export function tokenBytes(t: Token): Uint8Array {
  if (typeof t !== "string") return t;
  const s = t.trim().replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*$/.test(s) || s.length % 4 === 1) throw new Error("player: token is not base64url");
  const bin = atob(s + "===".slice((s.length + 3) % 4));
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}

/** What a Client needs to play. */
export interface ClientOptions {
  /** The node's WebSocket player endpoint (ws:// or wss://). */
  url: string;
  /**
   * The token to join with, or a function giving a fresh one for the node
   * at url (tokens are single-use and name their node: reconnecting needs
   * a new one).
   */
  token: Token | ((url: string) => Promise<Token>);
  /** Reconnect after a dropped connection (default true when token is a function). */
  reconnect?: boolean;
  /** First reconnect delay in ms (default 250), doubled per failure up to maxBackoffMs (default 8000). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Gives up after this many reconnects in a row (default 8). */
  maxRetries?: number;
  /** The WebSocket constructor (default: the global one). */
  WebSocket?: typeof WebSocket;
  /**
   * Presume the node dead when no State arrives for this many ms (0, the
   * default: never): the connection is then dropped, and reconnected as
   * any dropped connection. A node sends a State every frame, so a few
   * dozen frame periods tell a dead node from a slow one.
   */
  idleTimeoutMs?: number;
  /**
   * The WebSocket URLs of the nodes the avatar may fail over to (the
   * node's peers), or a function giving them. When the connection drops,
   * the client first joins the node it played on again (if it answers
   * within 3 s it is up, the connection alone was lost, and the avatar
   * with the session), then tries to take its avatar back on those (the
   * node it played on left out): a Rejoin to each at once, as the Go client's
   * ResumeAny does, keeping the first that sends a State (which a node
   * does only once the avatar's primary is there: its backup took over),
   * again every half second for resumeForMs; then it joins afresh as
   * before. Needs a token function (a Rejoin takes a token).
   */
  resume?: string[] | (() => string[] | Promise<string[]>);
  /** How long to keep trying to take the avatar back after the connection dropped, in ms (default 12000). */
  resumeForMs?: number;
}

/** What Client.resume needs beside ClientOptions' token and WebSocket. */
export interface ResumeOptions {
  /** The WebSocket URLs of the nodes to try, all at once. */
  urls: string[];
  /** The token, or a function giving a fresh one for each node. */
  token: Token | ((url: string) => Promise<Token>);
  /** The avatar to take back. */
  avatar: bigint;
  /** The avatar's deed (Client.deed of the session that lost it): proves the avatar the player's. */
  deed: Uint8Array;
  /** The last input the client saw applied: the nodes apply the later ones. */
  seq: number;
  /** How long each attempt waits for the avatar's first State, in ms (default 8000). */
  waitMs?: number;
  WebSocket?: typeof WebSocket;
}

/** Statistics of a client's session. */
export interface ClientStats {
  states: number;
  stateBytes: number;
  applied: number;
  inputs: number;
  /** Input → State echo times in ms: from sending an input to applying the first State that reflects it. */
  rtt: number[];
  handoffs: number;
  /** Per handoff, ms from the old node's last State applied to the new node's first. */
  handoffGaps: number[];
  reconnects: number;
  /** Times the client took its avatar back on another node after its node died (Resume). */
  resumes: number;
}

/** One connection to a node. */
interface Leg {
  ws: WebSocket;
  welcome: Welcome;
  view: View;
  node: number; // 0: the node first joined (its ID unknown to the client)
  url: string;
}

type Listener<T> = (v: T) => void;

function now(): number {
  return typeof performance !== "undefined" ? performance.now() : Date.now();
}

function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, ms));
}

/**
 * Opens a WebSocket to url, sends first, and resolves with the socket and
 * the Welcome of the node's JoinOK (a refusal rejects with a RefusedError;
 * so does no JoinOK within timeoutMs, if given, closing the socket).
 */
function dial(WS: typeof WebSocket, url: string, first: Uint8Array, onMessage: (ws: WebSocket, m: Uint8Array) => void, onClose: (ws: WebSocket, e: Error) => void, timeoutMs = 0): Promise<[WebSocket, Welcome]> {
  return new Promise((resolve, reject) => {
    let ws: WebSocket;
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
    ws.onmessage = (ev: MessageEvent) => {
      if (gaveUp) return;
      const m = new Uint8Array(ev.data as ArrayBuffer);
      if (joined) {
        onMessage(ws, m);
        return;
      }
      try {
        const t = open(m);
        if (t === MsgType.State) return; // may overtake the JoinOK
        if (t === MsgType.Error) throw decodeError(m);
        if (t !== MsgType.JoinOK) throw new MalformedError(` (${t}): expected joinok or error`);
        joined = true;
        resolve([ws, decodeJoinOK(m)]);
      } catch (e) {
        reject(e); // before the close, whose event may come at once
        ws.close();
      }
    };
    ws.onerror = () => {
      if (!joined) reject(new Error(`player: websocket to ${url} failed`));
    };
    ws.onclose = (ev: CloseEvent) => {
      if (!joined) reject(new Error(`player: websocket to ${url} closed before joinok (${ev.code})`));
      else onClose(ws, new Error(`player: websocket closed (${ev.code} ${ev.reason})`));
    };
  });
}

/**
 * Opens a WebSocket to url with a Rejoin for avatar (first) and resolves
 * once the node sent its first State, which it sends only when the
 * avatar's primary is there: the socket, the JoinOK, that State and the
 * node's new deed (sent before the State; null if none came). An
 * Error, a JoinOK or a deed for another avatar, a close or waitMs
 * without a State rejects (and closes the socket). After it resolves,
 * the socket's messages and close go to onMessage and onClose.
 */
function dialAvatar(WS: typeof WebSocket, url: string, first: Uint8Array, avatar: bigint, waitMs: number,
  onMessage: (ws: WebSocket, m: Uint8Array) => void, onClose: (ws: WebSocket, e: Error) => void): Promise<[WebSocket, Welcome, Uint8Array, Uint8Array | null]> {
  return new Promise((resolve, reject) => {
    let phase: "dial" | "wait" | "play" | "done" = "dial";
    let sock: WebSocket | null = null;
    let welcome: Welcome | null = null;
    let deed: Uint8Array | null = null;
    const give = (e: Error) => {
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
        resolve([ws, welcome!, m, deed]);
      } catch (e) {
        give(e as Error);
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
    }, (e) => give(e as Error));
  });
}

/**
 * Client is one player's session. Build it with Client.join. It applies
 * and acknowledges every State, calls the state listeners after each
 * applied State, and sends the inputs given to input(). On a Redirect it
 * rejoins the named node (Rejoin), sends it again the inputs the old node
 * did not apply, keeps applying the old node's States until the new
 * node's first one, then leaves the old node.
 */
export class Client {
  private cur!: Leg;
  private next: Leg | null = null;
  private seq = 0;
  private echoed = 0;
  private sentAt = new Float64Array(256);
  private sent: (Uint8Array | null)[] = new Array(256).fill(null);
  private lastApplied = 0;
  private closed = false;
  private reconnecting = false;
  private stateL: Listener<Client>[] = [];
  private eventL: Listener<string>[] = [];
  private endL: Listener<Error | null>[] = [];
  /** The session's statistics. */
  readonly stats: ClientStats = { states: 0, stateBytes: 0, applied: 0, inputs: 0, rtt: [], handoffs: 0, handoffGaps: [], reconnects: 0, resumes: 0 };
  private readonly WS: typeof WebSocket;
  private token: Uint8Array = new Uint8Array(0);
  private tk: Uint8Array | null = null;

  private constructor(private readonly opts: ClientOptions) {
    this.WS = opts.WebSocket ?? WebSocket;
  }

  /** Joins the node at opts.url; resolves once the node accepted the player. */
  static async join(opts: ClientOptions): Promise<Client> {
    const c = new Client(opts);
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
  static async resume(r: ResumeOptions, opts: Partial<ClientOptions> = {}): Promise<Client> {
    const c = new Client({ ...opts, url: r.urls[0] ?? "", token: r.token, WebSocket: r.WebSocket ?? opts.WebSocket });
    c.seq = r.seq;
    c.echoed = r.seq;
    c.tk = r.deed.slice();
    if (!(await c.takeBack(r.urls, r.avatar, r.seq, r.waitMs ?? 8000))) throw new Error(`player: no node of ${r.urls.length} holds avatar ${r.avatar}`);
    c.stats.resumes = 0;
    c.startIdle();
    return c;
  }

  private startIdle() {
    const c = this;
    const idle = this.opts.idleTimeoutMs ?? 0;
    if (idle > 0) {
      const timer = setInterval(() => {
        if (c.closed) clearInterval(timer);
        else c.checkIdle();
      }, Math.max(50, Math.min(1000, idle / 4)));
    }
  }

  /**
   * Rejoins avatar on every node of urls at once and plays on the first
   * that sends a State (closing the others): it resends the inputs after
   * seq there and reports true; false when none did within waitMs.
   */
  private async takeBack(urls: string[], avatar: bigint, seq: number, waitMs: number): Promise<boolean> {
    if (urls.length === 0) return false;
    let won: Leg | null = null;
    const tries = urls.map(async (url) => {
      const token = await this.freshToken(url);
      const deed = this.tk ?? new Uint8Array(0);
      const [ws, w, first, fresh] = await dialAvatar(this.WS, url, encodeRejoin({ token, deed, avatar, seq }), avatar, waitMs, (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e));
      if (won || this.closed) {
        ws.close(); // another node won (cannot happen while an avatar has one primary)
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
  checkIdle(at = now()): boolean {
    const idle = this.opts.idleTimeoutMs ?? 0;
    if (idle <= 0 || this.closed || this.reconnecting || at - this.lastApplied <= idle) return false;
    const ws = this.cur.ws;
    ws.onclose = null; // a dead peer may take long to close: do not wait for it
    ws.close();
    this.onClose(ws, new Error(`player: the node fell silent: no state for ${idle} ms`));
    return true;
  }

  private async freshToken(url: string): Promise<Uint8Array> {
    const t = this.opts.token;
    return tokenBytes(typeof t === "function" ? await t(url) : t);
  }

  private async connect(url: string, timeoutMs = 0): Promise<void> {
    this.token = await this.freshToken(url);
    const [ws, w] = await dial(this.WS, url, encodeJoin(this.token), (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e), timeoutMs);
    this.cur = { ws, welcome: w, view: new View(w), node: 0, url };
    this.tk = null; // a new avatar: its deed follows the JoinOK
    this.seq = 0;
    this.echoed = 0;
    this.sent.fill(null);
    this.lastApplied = now();
  }

  /** The JoinOK of the node the client plays on. */
  get welcome(): Welcome {
    return this.cur.welcome;
  }
  /** What the player sees (replaced at a handoff or reconnect). */
  get view(): View {
    return this.cur.view;
  }
  /** The ID of the node played on, as its Redirect named it (0: the node first joined). */
  get node(): number {
    return this.cur.node;
  }
  /** The WebSocket URL of the node played on. */
  get url(): string {
    return this.cur.url;
  }
  /**
   * The newest avatar deed a node gave (null before the first): what a
   * Rejoin presents to take the avatar back (Client.resume), as the Go
   * client's Deed.
   */
  get deed(): Uint8Array | null {
    return this.tk ? this.tk.slice() : null;
  }
  /** The newest input seq sent. */
  get inputSeq(): number {
    return this.seq;
  }
  /** The last input the node applied (echoed in a State): where Client.resume picks up, as the Go client's LastApplied. */
  get appliedSeq(): number {
    return this.echoed;
  }

  /** Calls fn after every State applied. */
  onState(fn: Listener<Client>): void {
    this.stateL.push(fn);
  }
  /** Calls fn with a line saying what happened (redirects, reconnects). */
  onEvent(fn: Listener<string>): void {
    this.eventL.push(fn);
  }
  /** Calls fn when the session ends for good (null: the player left). */
  onEnd(fn: Listener<Error | null>): void {
    this.endL.push(fn);
  }

  private event(s: string) {
    for (const f of this.eventL) f(s);
  }

  /** Sends one game input (at most MAX_INPUT bytes); returns its seq. */
  input(b: Uint8Array): number {
    if (b.length > MAX_INPUT) throw new RangeError(`player: a ${b.length}-byte input (limit ${MAX_INPUT})`);
    if (this.closed) return 0;
    this.seq++;
    const k = this.seq % 256;
    this.sentAt[k] = now();
    this.sent[k] = b.slice();
    this.stats.inputs++;
    const to = this.next ?? this.cur; // the old node ignores inputs once it handed the avatar off
    if (to.ws.readyState === 1) to.ws.send(encodeInput(this.seq, b));
    return this.seq;
  }

  /** When input seq was sent (performance.now() ms; 0: unknown). */
  sentTime(seq: number): number {
    return seq > 0 && seq > this.seq - 256 ? this.sentAt[seq % 256] : 0;
  }

  /** Leaves the node(s) and closes the connections. */
  leave(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of [this.cur, this.next]) {
      if (!l) continue;
      try {
        if (l.ws.readyState === 1) l.ws.send(encodeLeave());
      } catch {
        /* closing anyway */
      }
      l.ws.close();
    }
    for (const f of this.endL) f(null);
  }

  private fail(e: Error) {
    if (this.closed) return;
    this.closed = true;
    for (const l of [this.cur, this.next]) l?.ws.close();
    for (const f of this.endL) f(e);
  }

  private leg(ws: WebSocket): Leg | null {
    if (this.cur && this.cur.ws === ws) return this.cur;
    if (this.next && this.next.ws === ws) return this.next;
    return null;
  }

  private onMessage(ws: WebSocket, m: Uint8Array) {
    const l = this.leg(ws);
    if (!l || this.closed) return;
    try {
      this.handle(l, m);
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private onClose(ws: WebSocket, e: Error) {
    const l = this.leg(ws);
    if (!l || this.closed) return;
    if (l === this.next) {
      this.next = null; // the handoff failed; the old node still plays
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

  private async reconnect(why: Error) {
    if (this.reconnecting) return;
    this.reconnecting = true;
    let delay = this.opts.backoffMs ?? 250;
    const maxDelay = this.opts.maxBackoffMs ?? 8000;
    const tries = this.opts.maxRetries ?? 8;
    let last = why;
    if (this.opts.resume && typeof this.opts.token === "function" && this.cur) {
      const lost = this.cur;
      const avatar = lost.welcome.avatar;
      const seq = this.echoed;
      // The node played on may be up, the connection alone lost: its
      // avatar then left with the session, and the player joins there
      // afresh at once. A node that died refuses the connection (or
      // does not answer in time): then its avatar is looked for where its
      // backup took over.
      this.event(`connection lost (${why.message}); joining ${lost.url} again`);
      try {
        await this.connect(lost.url, 3000);
        this.stats.reconnects++;
        this.reconnecting = false;
        this.event(`reconnected to ${this.cur.url}`);
        return;
      } catch (e) {
        last = e as Error;
        this.cur = lost;
      }
      // A refusal is an answer: the node is up, and the avatar did not
      // fail over (the refusal's code decides below whether to retry).
      const up = last instanceof RefusedError;
      const until = now() + (this.opts.resumeForMs ?? 12000);
      if (!up) this.event(`${lost.url}: ${last.message}; looking for avatar ${avatar} on the other nodes`);
      while (!up && !this.closed && now() < until) {
        let urls: string[] = [];
        try {
          const r = this.opts.resume;
          urls = (typeof r === "function" ? await r() : r).filter((u) => u !== lost.url);
        } catch (e) {
          last = e as Error;
        }
        if (urls.length === 0) break;
        if (await this.takeBack(urls, avatar, seq, Math.max(1000, Math.min(8000, until - now())))) {
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
        last = e as Error;
        // A duplicate player: the node has not yet ended the lost session.
        if (e instanceof RefusedError && e.code !== Code.Shutdown && e.code !== Code.Full && e.code !== Code.Duplicate) break;
        delay = Math.min(maxDelay, delay * 2);
      }
    }
    this.reconnecting = false;
    this.fail(last);
  }

  private handle(l: Leg, m: Uint8Array) {
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
      // The new node's first State: play there from now on.
      this.stats.handoffGaps.push(t1 - this.lastApplied);
      const old = this.cur;
      this.cur = l;
      this.next = null;
      try {
        if (old.ws.readyState === 1) old.ws.send(encodeLeave());
      } catch {
        /* closing anyway */
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
  private async follow(r: Redirect) {
    if (this.next || r.avatar !== this.cur.welcome.avatar) {
      this.fail(new Error(`player: redirect to node ${r.node} for avatar ${r.avatar} while playing ${this.cur.welcome.avatar}, handed off already: ${this.next !== null}`));
      return;
    }
    if (!r.ws) {
      this.fail(new Error(`player: redirected to node ${r.node}, which has no WebSocket endpoint`));
      return;
    }
    this.event(`redirected to node ${r.node} (${r.ws})`);
    let ws: WebSocket;
    let w: Welcome;
    try {
      [ws, w] = await dial(this.WS, r.ws, encodeRejoin({ token: this.token, deed: this.tk ?? new Uint8Array(0), avatar: r.avatar, seq: r.seq }), (s, m) => this.onMessage(s, m), (s, e) => this.onClose(s, e));
    } catch (e) {
      this.fail(new Error(`player: following the redirect to node ${r.node}: ${(e as Error).message}`));
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
}

/** The q-quantile of xs (0 without any). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

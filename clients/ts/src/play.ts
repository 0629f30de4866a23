// The arena game in the browser (/play on a node): joins the node that
// serves the page with a token, draws what the player's interest holds
// (walls, bots, rockets, items) on a canvas, and sends the player's
// keyboard and mouse controls. The token comes from the page's fragment
// (#token=...), or from a lobby (#lobby=URL: POST URL/token?ws=HOST gives
// a fresh one for the node at HOST, for reconnecting), or from the form
// the page shows. With a lobby, the page's player stays the same across
// reconnects (#player=NAME&key=KEY: the lobby's proof that the name is
// the page's), so that when its node dies it can take its avatar back on
// the node's peers (/play/node.json lists them), where the avatar's
// backup took over.

import { Client, quantile, type Token } from "./client";
import { encodeArenaInput, isPlayerAvatar, RUN_SPEED } from "./arena";
import { type Obj } from "./view";
import { idString } from "./proto";

interface Scene {
  w: number;
  h: number;
  obstacles: [number, number, number, number][];
}

/** What the page exposes to tests and curious players (window.overworldPlay). */
interface PlayState {
  client: Client | null;
  joined: boolean;
  error: string;
  /** Input-to-screen latencies in ms: from a key or mouse event to the first frame drawn with its echo. */
  latency: number[];
  /** The input → State echo time of the same inputs, in ms. */
  rtt: number[];
  /** Display frames drawn, and their mean period in ms. */
  frames: number;
  framePeriod: number;
  avatar(): { id: string; x: number; y: number } | null;
  node(): number;
}

const st: PlayState = {
  client: null,
  joined: false,
  error: "",
  latency: [],
  rtt: [],
  frames: 0,
  framePeriod: 0,
  avatar: () => null,
  node: () => 0,
};
(globalThis as any).overworldPlay = st;

const $ = (id: string) => document.getElementById(id)!;

function params(): URLSearchParams {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function wsURL(): string {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/";
}

async function tokenSource(): Promise<Token | ((url: string) => Promise<Token>) | null> {
  const p = params();
  const lobby = p.get("lobby");
  let first = p.get("token");
  const who = new URLSearchParams();
  for (const k of ["player", "key"]) {
    const v = p.get(k);
    if (v) who.set(k, v);
  }
  if (first) history.replaceState(null, "", location.pathname + (lobby ? "#lobby=" + encodeURIComponent(lobby) + (who.size ? "&" + who : "") : ""));
  if (lobby) {
    return async (url: string) => {
      if (first) {
        const t = first;
        first = null;
        return t;
      }
      // A token names its node: the lobby issues one for the node at url.
      const r = await fetch(lobby.replace(/\/$/, "") + "/token?ws=" + encodeURIComponent(new URL(url).host) + (who.size ? "&" + who : ""), { method: "POST" });
      if (!r.ok) throw new Error(`lobby: ${r.status} ${await r.text()}`);
      return (await r.text()).trim();
    };
  }
  return first;
}

let nodeLabel = () => "node";

// Controls.
const keys = new Set<string>();
let aim = 0;
let fire = false;
let pendingEvent = 0; // performance.now() of the control change not yet sent

function velocity(): [number, number] {
  let x = 0;
  let y = 0;
  if (keys.has("ArrowLeft") || keys.has("KeyA")) x--;
  if (keys.has("ArrowRight") || keys.has("KeyD")) x++;
  if (keys.has("ArrowUp") || keys.has("KeyW")) y++;
  if (keys.has("ArrowDown") || keys.has("KeyS")) y--;
  const n = Math.hypot(x, y);
  return n === 0 ? [0, 0] : [(x / n) * RUN_SPEED, (y / n) * RUN_SPEED];
}

// Inputs waiting for their echo, then for the frame that draws it.
const waiting: { seq: number; at: number; session: number }[] = [];
let echoedAt: { at: number; rtt: number }[] = [];

function send(c: Client, at: number) {
  const [vx, vy] = velocity();
  const seq = c.input(encodeArenaInput({ vx, vy, fire, aim }));
  fire = false;
  if (at > 0 && seq > 0) waiting.push({ seq, at, session: c.stats.reconnects });
}

function control(ev: Event) {
  pendingEvent = pendingEvent || ev.timeStamp || performance.now();
  const c = st.client;
  if (c) {
    send(c, pendingEvent);
    pendingEvent = 0;
  }
}

function draw(ctx: CanvasRenderingContext2D, c: Client, scene: Scene | null) {
  const cv = ctx.canvas;
  if (cv.width !== cv.clientWidth || cv.height !== cv.clientHeight) {
    cv.width = cv.clientWidth;
    cv.height = cv.clientHeight;
  }
  const v = c.view;
  const me = v.lookup(c.welcome.avatar);
  const cx = me ? me.num("x") : scene ? scene.w / 2 : 0;
  const cy = me ? me.num("y") : scene ? scene.h / 2 : 0;
  const scale = Math.max(4, Math.min(cv.width, cv.height) / 80); // pixels per metre: about 80 m across
  const X = (x: number) => cv.width / 2 + (x - cx) * scale;
  const Y = (y: number) => cv.height / 2 - (y - cy) * scale;
  ctx.fillStyle = "#10141c";
  ctx.fillRect(0, 0, cv.width, cv.height);
  if (scene) {
    ctx.strokeStyle = "#334";
    ctx.strokeRect(X(0), Y(scene.h), scene.w * scale, scene.h * scale);
    ctx.fillStyle = "#4a5066";
    for (const [x0, y0, x1, y1] of scene.obstacles) ctx.fillRect(X(x0), Y(y1), (x1 - x0) * scale, (y1 - y0) * scale);
  }
  for (const o of v.objects) drawObj(ctx, o, X, Y, scale, o === me);
  const rtt = c.stats.rtt.slice(-100);
  $("hud").textContent =
    `${nodeLabel()} · player ${c.welcome.player} · avatar ${idString(c.welcome.avatar)} · ` +
    `RTT p50 ${quantile(rtt, 0.5).toFixed(0)} ms p95 ${quantile(rtt, 0.95).toFixed(0)} ms · ` +
    `${v.objects.length} objects in view · frame ${v.frame}` +
    (me ? ` · health ${me.num("health")} · deaths ${me.num("deaths")}` : "");
}

function drawObj(ctx: CanvasRenderingContext2D, o: Obj, X: (x: number) => number, Y: (y: number) => number, scale: number, self: boolean) {
  const x = X(o.num("x"));
  const y = Y(o.num("y"));
  switch (o.schema.name) {
    case "arena.bot": {
      const dead = o.num("health") <= 0;
      ctx.fillStyle = self ? "#4ade80" : isPlayerAvatar(o) ? "#60a5fa" : "#f87171";
      if (dead) ctx.fillStyle = "#555";
      ctx.beginPath();
      ctx.arc(x, y, Math.max(3, 0.5 * scale), 0, 2 * Math.PI);
      ctx.fill();
      if (self) {
        ctx.strokeStyle = "#fff";
        ctx.beginPath();
        ctx.moveTo(x, y);
        ctx.lineTo(x + Math.cos(aim) * 1.5 * scale, y - Math.sin(aim) * 1.5 * scale);
        ctx.stroke();
      }
      break;
    }
    case "arena.missile":
      ctx.fillStyle = "#fb923c";
      ctx.fillRect(x - 2, y - 2, 4, 4);
      break;
    case "arena.item":
      if (o.get("taken") === true) break;
      ctx.fillStyle = "#facc15";
      ctx.fillRect(x - 0.3 * scale, y - 0.3 * scale, 0.6 * scale, 0.6 * scale);
      break;
    default:
      ctx.fillStyle = "#aaa";
      ctx.fillRect(x - 2, y - 2, 4, 4);
  }
}

async function main() {
  const cv = $("world") as HTMLCanvasElement;
  const ctx = cv.getContext("2d")!;
  let scene: Scene | null = null;
  try {
    const r = await fetch("/play/scene.json");
    if (r.ok) scene = (await r.json()) as Scene;
  } catch {
    /* a game without a scene: draw the objects alone */
  }
  let first: { id: number; city: string; peers?: string[] } = { id: 0, city: "" };
  try {
    const r = await fetch("/play/node.json");
    if (r.ok) first = await r.json();
  } catch {
    /* shown as its address */
  }
  let src = await tokenSource();
  if (!src) {
    $("join").style.display = "block";
    src = await new Promise<Token>((res) =>
      $("join").addEventListener("submit", (ev) => {
        ev.preventDefault();
        res(($("token") as HTMLInputElement).value);
      }),
    );
    $("join").style.display = "none";
  }
  let c: Client;
  try {
    c = await Client.join({ url: wsURL(), token: src, idleTimeoutMs: 10000, resume: first.peers ?? [] });
  } catch (e) {
    st.error = (e as Error).message;
    $("hud").textContent = "could not join: " + st.error;
    return;
  }
  st.client = c;
  st.joined = true;
  st.avatar = () => {
    const o = c.view.lookup(c.welcome.avatar);
    return o ? { id: c.welcome.avatar.toString(), x: o.num("x"), y: o.num("y") } : null;
  };
  // The node played on: the one serving the page, until a Redirect names
  // another, or the avatar is taken back on a peer (its address).
  st.node = () => c.node || (c.url === wsURL() ? first.id : 0);
  nodeLabel = () =>
    c.node ? `node ${c.node}` : c.url === wsURL() && first.id ? `node ${first.id}${first.city ? " (" + first.city + ")" : ""}` : `node ${new URL(c.url).host}`;
  c.onEvent((s) => ($("events").textContent = s));
  c.onEnd((e) => {
    st.error = e ? e.message : "left";
    $("events").textContent = "session ended: " + st.error;
  });
  c.onState(() => {
    const s = c.view.inputSeq;
    const t = performance.now();
    while (waiting.length && (waiting[0].seq <= s || waiting[0].session !== c.stats.reconnects)) {
      const w = waiting.shift()!;
      if (w.session === c.stats.reconnects) echoedAt.push({ at: w.at, rtt: t - c.sentTime(w.seq) }); // inputs of a lost connection: never echoed
    }
  });
  addEventListener("pagehide", () => c.leave()); // the node frees the avatar at once
  addEventListener("keydown", (ev) => {
    if (ev.repeat || !/^(Arrow|Key[WASD]$)/.test(ev.code)) return;
    keys.add(ev.code);
    ev.preventDefault();
    control(ev);
  });
  addEventListener("keyup", (ev) => {
    if (!keys.delete(ev.code)) return;
    control(ev);
  });
  cv.addEventListener("mousemove", (ev) => {
    aim = Math.atan2(cv.clientHeight / 2 - ev.offsetY, ev.offsetX - cv.clientWidth / 2);
  });
  cv.addEventListener("mousedown", (ev) => {
    fire = true;
    control(ev);
  });
  // The held controls again every frame period (the node keeps the last
  // velocity; this keeps the aim fresh).
  setInterval(() => send(c, 0), c.welcome.frameEveryNs / 1e6);
  let last = 0;
  const frame = (t: number) => {
    draw(ctx, c, scene);
    const drawn = performance.now();
    for (const e of echoedAt) {
      st.latency.push(drawn - e.at);
      st.rtt.push(e.rtt);
    }
    echoedAt = [];
    if (last > 0) st.framePeriod = (st.framePeriod * st.frames + (t - last)) / (st.frames + 1);
    last = t;
    st.frames++;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

void main();

// The live dashboard (/dashboard on a node's admin endpoint, and
// `overworld dashboard --cluster`): every second it reads each node's
// /metrics (what Prometheus scrapes) and /debug/world, and draws the game
// world with every object colored by the node holding its primary and
// each node's interest boxes, the nodes at their cities on a map of the
// earth with their players and links, and time series of bandwidth by
// traffic class, missing replicas, discovery latency, frame time,
// failovers and migrations. It only reads.

interface NodeInfo {
  id: number;
  city: string;
  lat: number;
  lon: number;
  /** URL prefix of the node's admin endpoints (null: known from configuration only). */
  base: string | null;
}

interface Info {
  title: string;
  self: number;
  nodes: NodeInfo[];
  /** The game world's extent. */
  world: { w: number; h: number };
  /** Poll period in ms. */
  every: number;
  /**
   * Whose clock the series run on: the browser's (absent), or "game": the
   * nodes' own time (their snapshots' now_ns), for a simulated run, whose
   * game time need not pass as fast as the browser's.
   */
  clock?: string;
}

interface SnapObject {
  id: number;
  primary: boolean;
  loc: number[];
  kind?: string;
  from?: number;
}

interface Snapshot {
  node: number;
  now_ns: number;
  view: [number[], number[]][];
  objects: SnapObject[] | null;
}

/** One line of a chart: values over time (ms since the dashboard opened). */
interface Series {
  name: string;
  t: number[];
  v: number[];
}

const MAX_POINTS = 300;
const charts: Record<string, { title: string; unit: string; series: Map<string, Series> }> = {
  bandwidth: { title: "bandwidth by class (in + out, all nodes)", unit: "kB/s", series: new Map() },
  missing: { title: "missing replicas (objects in a node's view, primary elsewhere, no replica there)", unit: "%", series: new Map() },
  discovery: { title: "discovery latency (view entry to replica, at the poll period's resolution)", unit: "ms", series: new Map() },
  frame: { title: "frame time (mean per poll)", unit: "ms", series: new Map() },
  failovers: { title: "failovers (promotions)", unit: "count", series: new Map() },
  migrations: { title: "migrations", unit: "count", series: new Map() },
  players: { title: "players", unit: "count", series: new Map() },
};

/** What the page exposes to tests (window.overworldDashboard). */
const state = {
  info: null as Info | null,
  polls: 0,
  errors: [] as string[],
  charts,
  /** Points in the series with the most of them. */
  points(): number {
    let n = 0;
    for (const c of Object.values(charts)) for (const s of c.series.values()) n = Math.max(n, s.v.length);
    return n;
  },
};
(globalThis as any).overworldDashboard = state;

const palette = ["#60a5fa", "#f87171", "#4ade80", "#facc15", "#c084fc", "#fb923c", "#2dd4bf", "#f472b6", "#a3e635", "#94a3b8"];
const color = (node: number) => palette[(node - 1 + palette.length) % palette.length];
const t0 = performance.now();

/** The time of a poll, in ms: the browser's since the page opened, or the game's (Info.clock). */
let clockNow = () => performance.now() - t0;

function push(chart: string, name: string, v: number, t = clockNow()) {
  const c = charts[chart];
  let s = c.series.get(name);
  if (!s) c.series.set(name, (s = { name, t: [], v: [] }));
  s.t.push(t);
  s.v.push(v);
  if (s.v.length > MAX_POINTS) {
    s.t.shift();
    s.v.shift();
  }
}

/** Prometheus text format: metric name → [labels, value] samples. */
function parseMetrics(text: string): Map<string, [Record<string, string>, number][]> {
  const m = new Map<string, [Record<string, string>, number][]>();
  for (const line of text.split("\n")) {
    if (line === "" || line[0] === "#") continue;
    const mm = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!mm) continue;
    const labels: Record<string, string> = {};
    if (mm[3]) for (const l of mm[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const v = Number(mm[4]);
    if (!m.has(mm[1])) m.set(mm[1], []);
    m.get(mm[1])!.push([labels, v]);
  }
  return m;
}

function sum(m: Map<string, [Record<string, string>, number][]>, name: string, match: (l: Record<string, string>) => boolean = () => true): number {
  let s = 0;
  for (const [l, v] of m.get(name) ?? []) if (match(l)) s += v;
  return s;
}

interface Prev {
  at: number;
  m: Map<string, [Record<string, string>, number][]>;
}
const prev = new Map<number, Prev>();
const snaps = new Map<number, Snapshot>();
// Discovery: when each (node, object) pair was first seen in view and missing.
const pendingSince = new Map<string, number>();

// The admin bearer secret, from the fragment (#admin=SECRET) or this
// tab's storage: sent with every request when the nodes' admin endpoints
// want it.
const secret = (() => {
  const p = new URLSearchParams(location.hash.replace(/^#/, ""));
  const s = p.get("admin");
  if (s) {
    sessionStorage.setItem("overworld-admin", s);
    history.replaceState(null, "", location.pathname);
    return s;
  }
  return sessionStorage.getItem("overworld-admin");
})();

function headers(): Record<string, string> {
  return secret ? { Authorization: "Bearer " + secret } : {};
}

/** fetch with a deadline: a node that hangs must not stall the dashboard. */
async function get(url: string, ms = 5000): Promise<Response> {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    return await fetch(url, { signal: ac.signal, headers: headers() });
  } finally {
    clearTimeout(t);
  }
}

async function pollNode(n: NodeInfo): Promise<void> {
  const [mr, wr] = await Promise.all([get(n.base + "/metrics"), get(n.base + "/debug/world")]);
  if (!mr.ok) throw new Error(`node ${n.id}: /metrics: ${mr.status}`);
  const m = parseMetrics(await mr.text());
  let at = performance.now() - t0;
  let snap: Snapshot | null = null;
  if (wr.ok) {
    snap = (await wr.json()) as Snapshot;
    snap.view ??= []; // a node without primaries has no view (JSON null)
    snaps.set(n.id, snap);
  }
  if (gameClock) {
    // The node's own time: the metrics and the snapshot are of one frame.
    if (!snap) throw new Error(`node ${n.id}: /debug/world: ${wr.status}`);
    at = snap.now_ns / 1e6;
  }
  const p = prev.get(n.id);
  if (p && at <= p.at) return; // the same frame again (a paused or finished run)
  prev.set(n.id, { at, m });
  const name = `node ${n.id}`;
  push("players", name, sum(m, "overworld_players"), at);
  push("failovers", name, sum(m, "overworld_authority_events_total", (l) => l.kind === "promoted"), at);
  push("migrations", name, sum(m, "overworld_authority_events_total", (l) => l.kind === "migrated"), at);
  if (!p) return;
  const dt = (at - p.at) / 1000;
  const dc = sum(m, "overworld_frame_seconds_count") - sum(p.m, "overworld_frame_seconds_count");
  const ds = sum(m, "overworld_frame_seconds_sum") - sum(p.m, "overworld_frame_seconds_sum");
  if (dc > 0) push("frame", name, (1000 * ds) / dc, at);
  const classes = new Set((m.get("overworld_bytes_total") ?? []).map(([l]) => l.class));
  for (const cl of classes) {
    const b = sum(m, "overworld_bytes_total", (l) => l.class === cl) - sum(p.m, "overworld_bytes_total", (l) => l.class === cl);
    bw.set(cl, (bw.get(cl) ?? 0) + b / dt / 1000);
  }
}
let bw = new Map<string, number>();
let gameClock = false;
let lastTruth = -Infinity;
let lastBW = -Infinity;

function inBox(loc: number[], b: [number[], number[]]): boolean {
  for (let d = 0; d < b[0].length && d < loc.length; d++) if (!(loc[d] >= b[0][d] && loc[d] <= b[1][d])) return false;
  return true;
}

/** Missing replicas and discovery latency from the nodes' snapshots. */
function truth(polledAt: number) {
  if (snaps.size < 2 || polledAt <= lastTruth) return;
  lastTruth = polledAt;
  const primaries: [number, SnapObject][] = [];
  for (const s of snaps.values()) for (const o of s.objects ?? []) if (o.primary) primaries.push([s.node, o]);
  let inView = 0;
  let missing = 0;
  const lat: number[] = [];
  for (const s of snaps.values()) {
    const held = new Set((s.objects ?? []).map((o) => o.id));
    for (const [home, o] of primaries) {
      if (home === s.node || !s.view.some((b) => inBox(o.loc, b))) continue;
      inView++;
      const key = `${s.node}/${o.id}`;
      if (held.has(o.id)) {
        const since = pendingSince.get(key);
        if (since !== undefined) {
          lat.push(polledAt - since);
          pendingSince.delete(key);
        }
      } else {
        missing++;
        if (!pendingSince.has(key)) pendingSince.set(key, polledAt);
      }
    }
  }
  if (inView > 0) push("missing", "cluster", (100 * missing) / inView, polledAt);
  if (lat.length > 0) push("discovery", "cluster", lat.reduce((a, b) => a + b, 0) / lat.length, polledAt);
  if (pendingSince.size > 100000) pendingSince.clear();
}

function drawWorld(info: Info) {
  const cv = document.getElementById("world") as HTMLCanvasElement;
  const ctx = cv.getContext("2d")!;
  cv.width = cv.clientWidth;
  cv.height = cv.clientHeight;
  const s = Math.min(cv.width / info.world.w, cv.height / info.world.h);
  const X = (x: number) => x * s;
  const Y = (y: number) => cv.height - y * s;
  ctx.fillStyle = "#10141c";
  ctx.fillRect(0, 0, cv.width, cv.height);
  ctx.strokeStyle = "#334";
  ctx.strokeRect(0, cv.height - info.world.h * s, info.world.w * s, info.world.h * s);
  for (const sn of snaps.values()) {
    ctx.strokeStyle = color(sn.node);
    ctx.globalAlpha = 0.5;
    for (const [lo, hi] of sn.view) {
      const x0 = Math.max(0, lo[0]);
      const y0 = Math.max(0, lo[1] ?? 0);
      const x1 = Math.min(info.world.w, hi[0]);
      const y1 = Math.min(info.world.h, hi[1] ?? info.world.h);
      if (x1 > x0 && y1 > y0) ctx.strokeRect(X(x0), Y(y1), (x1 - x0) * s, (y1 - y0) * s);
    }
    ctx.globalAlpha = 1;
  }
  for (const sn of snaps.values()) {
    ctx.fillStyle = color(sn.node);
    for (const o of sn.objects ?? []) {
      if (!o.primary) continue;
      const r = o.kind === "arena.bot" ? 3 : 1.5;
      ctx.fillRect(X(o.loc[0]) - r, Y(o.loc[1] ?? 0) - r, 2 * r, 2 * r);
    }
  }
}

let earth: [number, number][] = [];

function drawEarth(info: Info) {
  const cv = document.getElementById("earth") as HTMLCanvasElement;
  const ctx = cv.getContext("2d")!;
  cv.width = cv.clientWidth;
  cv.height = cv.clientHeight;
  const X = (lon: number) => ((lon + 180) / 360) * cv.width;
  const Y = (lat: number) => ((90 - lat) / 180) * cv.height;
  ctx.fillStyle = "#0b1020";
  ctx.fillRect(0, 0, cv.width, cv.height);
  ctx.strokeStyle = "#1e293b";
  for (let lon = -180; lon <= 180; lon += 30) {
    ctx.beginPath();
    ctx.moveTo(X(lon), 0);
    ctx.lineTo(X(lon), cv.height);
    ctx.stroke();
  }
  for (let lat = -60; lat <= 60; lat += 30) {
    ctx.beginPath();
    ctx.moveTo(0, Y(lat));
    ctx.lineTo(cv.width, Y(lat));
    ctx.stroke();
  }
  ctx.fillStyle = "#334155";
  for (const [lat, lon] of earth) ctx.fillRect(X(lon) - 0.75, Y(lat) - 0.75, 1.5, 1.5);
  const located = info.nodes.filter((n) => n.city !== "");
  ctx.strokeStyle = "#475569";
  for (let i = 0; i < located.length; i++)
    for (let j = i + 1; j < located.length; j++) {
      ctx.beginPath();
      ctx.moveTo(X(located[i].lon), Y(located[i].lat));
      ctx.lineTo(X(located[j].lon), Y(located[j].lat));
      ctx.stroke();
    }
  ctx.font = "12px sans-serif";
  for (const n of located) {
    const pl = charts.players.series.get(`node ${n.id}`);
    const players = pl && pl.v.length ? pl.v[pl.v.length - 1] : 0;
    ctx.fillStyle = color(n.id);
    ctx.beginPath();
    ctx.arc(X(n.lon), Y(n.lat), 5 + Math.sqrt(players), 0, 2 * Math.PI);
    ctx.fill();
    ctx.fillStyle = "#e2e8f0";
    const label = `${n.id} ${n.city} (${players})`;
    const lx = X(n.lon) + 8 + ctx.measureText(label).width > cv.width ? X(n.lon) - 8 - ctx.measureText(label).width : X(n.lon) + 8;
    ctx.fillText(label, lx, Y(n.lat) + 4);
  }
}

function drawChart(el: HTMLCanvasElement, c: (typeof charts)[string]) {
  const ctx = el.getContext("2d")!;
  el.width = el.clientWidth;
  el.height = el.clientHeight;
  ctx.fillStyle = "#10141c";
  ctx.fillRect(0, 0, el.width, el.height);
  let vmax = 0;
  let tmin = Infinity;
  let tmax = -Infinity;
  for (const s of c.series.values()) {
    for (const v of s.v) vmax = Math.max(vmax, v);
    if (s.t.length) {
      tmin = Math.min(tmin, s.t[0]);
      tmax = Math.max(tmax, s.t[s.t.length - 1]);
    }
  }
  ctx.fillStyle = "#cbd5e1";
  ctx.font = "11px sans-serif";
  ctx.fillText(`${c.title} — max ${vmax.toFixed(vmax < 10 ? 2 : 0)} ${c.unit}`, 4, 12);
  if (!(tmax > tmin)) return;
  const top = vmax > 0 ? vmax * 1.1 : 1;
  let k = 0;
  for (const s of c.series.values()) {
    const named = Number(/\d+$/.exec(s.name)?.[0] ?? NaN);
    ctx.strokeStyle = Number.isNaN(named) ? palette[k % palette.length] : color(named);
    ctx.beginPath();
    s.v.forEach((v, i) => {
      const x = ((s.t[i] - tmin) / (tmax - tmin)) * (el.width - 8) + 4;
      const y = el.height - 4 - (v / top) * (el.height - 20);
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
    ctx.fillStyle = ctx.strokeStyle;
    ctx.fillText(s.name, el.width - 90, 24 + 12 * k);
    k++;
  }
}

function render(info: Info) {
  drawWorld(info);
  drawEarth(info);
  const box = document.getElementById("charts")!;
  for (const [key, c] of Object.entries(charts)) {
    let el = document.getElementById("chart-" + key) as HTMLCanvasElement | null;
    if (!el) {
      el = document.createElement("canvas");
      el.id = "chart-" + key;
      el.className = "chart";
      box.appendChild(el);
    }
    drawChart(el, c);
  }
  const list = document.getElementById("nodes")!;
  list.innerHTML = "";
  for (const n of info.nodes) {
    const li = document.createElement("li");
    li.className = "node";
    li.dataset.node = String(n.id);
    const sn = snaps.get(n.id);
    const prim = sn ? (sn.objects ?? []).filter((o) => o.primary).length : 0;
    const repl = sn ? (sn.objects ?? []).length - prim : 0;
    li.style.color = color(n.id);
    li.textContent = `node ${n.id}${n.city ? " · " + n.city : ""}` + (n.base === null ? " · (not polled)" : ` · ${prim} primaries, ${repl} replicas`);
    list.appendChild(li);
  }
  document.getElementById("status")!.textContent = `${state.polls} polls` + (state.errors.length ? ` · last error: ${state.errors[state.errors.length - 1]}` : "");
}

async function main() {
  const r = await get("dashboard/info.json");
  if (!r.ok) {
    document.getElementById("status")!.textContent =
      r.status === 401 ? "this node's admin endpoint wants its bearer secret: open /dashboard#admin=SECRET" : `dashboard/info.json: ${r.status}`;
    return;
  }
  const info = (await r.json()) as Info;
  state.info = info;
  gameClock = info.clock === "game";
  if (gameClock) {
    // A poll's time is the game's: the newest of the nodes' snapshots.
    clockNow = () => Math.max(0, ...[...snaps.values()].map((s) => s.now_ns / 1e6));
    charts.discovery.title = "discovery latency (view entry to replica, at the poll period's resolution in game time)";
  }
  try {
    const e = await fetch("dashboard/earth.json");
    if (e.ok) earth = await e.json();
  } catch {
    /* the grid alone */
  }
  document.title = info.title;
  document.getElementById("title")!.textContent = info.title;
  const tick = async () => {
    bw = new Map();
    const polled = info.nodes.filter((n) => n.base !== null);
    const res = await Promise.allSettled(polled.map(pollNode));
    for (const x of res) if (x.status === "rejected") state.errors.push(String(x.reason));
    if (state.errors.length > 20) state.errors.splice(0, state.errors.length - 20);
    const t = clockNow();
    if (t > lastBW) for (const [cl, v] of bw) push("bandwidth", cl, v, t);
    lastBW = t;
    truth(t);
    state.polls++;
    render(info);
    setTimeout(tick, info.every);
  };
  await tick();
}

void main();

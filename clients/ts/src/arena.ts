// The arena game's input (the Go package arena's Input): what the
// browser game sends each time the player's controls change.

import { type Obj } from "./view";

/** Metres per second a player runs at most (arena.RunSpeed). */
export const RUN_SPEED = 10;
const VEL_QUANTUM = 1 / 8;

/** One arena input: the velocity wanted (m/s), and whether to fire in direction aim (radians). */
export interface ArenaInput {
  vx: number;
  vy: number;
  fire: boolean;
  aim: number;
}

/** Encodes an arena input: flags, vx and vy in 1/8 m/s (int16), aim in 1/65536 turns (uint16), big-endian. */
export function encodeArenaInput(inp: ArenaInput): Uint8Array {
  const b = new Uint8Array(7);
  const dv = new DataView(b.buffer);
  const q = (v: number) => Math.trunc(Math.max(-RUN_SPEED, Math.min(RUN_SPEED, v)) / VEL_QUANTUM);
  let turns = (inp.aim / (2 * Math.PI)) % 1;
  if (turns < 0) turns++;
  b[0] = inp.fire ? 1 : 0;
  dv.setInt16(1, q(inp.vx), false);
  dv.setInt16(3, q(inp.vy), false);
  dv.setUint16(5, Math.trunc(turns * 65536) & 0xffff, false);
  return b;
}

/** The arena kinds as their schemas name them. */
export const ArenaKind = { Bot: "arena.bot", Missile: "arena.missile", Item: "arena.item" } as const;

/** Whether o is a bot controlled by a player (its goal field is -1). */
export function isPlayerAvatar(o: Obj): boolean {
  return o.schema.name === ArenaKind.Bot && o.num("goal") === -1;
}

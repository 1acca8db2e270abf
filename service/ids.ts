import { randomFillSync } from "node:crypto";
import { ID_PREFIX, ID_RANDOM_LENGTH } from "../sdk/contract";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Random bytes drawn from a pool refilled 4 KiB at a time (as crypto.randomUUID does): one
 * CSPRNG call per ~100 ids instead of one per id, which showed in the GET profile.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** `count` random base62 characters, without modulo bias (rejection sampling). */
function randomBase62(count: number): string {
  let out = "";
  while (out.length < count) {
    const byte = randomByte();
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

export type IdKind = keyof typeof ID_PREFIX;
export const newId = (kind: IdKind): string => ID_PREFIX[kind] + randomBase62(ID_RANDOM_LENGTH);
export const newOperationId = (): string => "op_" + randomBase62(20);

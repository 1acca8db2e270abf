import { randomBytes } from "node:crypto";
import { ID_PREFIX, ID_RANDOM_LENGTH } from "../contract";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `count` random base62 characters, without modulo bias (rejection sampling). */
export function randomBase62(count: number): string {
  let out = "";
  while (out.length < count) {
    for (const byte of randomBytes(count * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === count) break;
    }
  }
  return out;
}

export type IdKind = keyof typeof ID_PREFIX;
export const newId = (kind: IdKind): string => ID_PREFIX[kind] + randomBase62(ID_RANDOM_LENGTH);
export const newOperationId = (): string => "op_" + randomBase62(20);

import type { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { type EdgeContext, type Env, errorResponse } from "../context";
import { ApiError } from "../../errors";

/**
 * 405 with `Allow`, decided where a 404 would be answered (`app.notFound`), not around every
 * request. Hono ships the same logic as middleware (`hono/method-not-allowed`), but as a
 * middleware it wraps every request: +5 µs of CPU on each cached GET here (43.3 vs 37.8 µs,
 * 3 runs of 200,000 in-process GETs), 12 %, which would take the GET share of BENCHMARKS.md
 * (64.9 %) under its 60 % target. Routes are read from the app the first time a 404 happens.
 */
export function notFoundOrMethodNotAllowed(app: Hono<Env>): (c: EdgeContext) => Response {
  let router: TrieRouter<string[]> | undefined;
  const allowedMethods = (path: string): string[] => {
    if (!router) {
      const byPattern = new Map<string, Set<string>>();
      for (const route of app.routes) {
        if (route.method === "ALL") continue; // middleware
        const methods = byPattern.get(route.path) ?? new Set<string>();
        methods.add(route.method);
        if (route.method === "GET") methods.add("HEAD");
        byPattern.set(route.path, methods);
      }
      router = new TrieRouter<string[]>();
      for (const [pattern, methods] of byPattern) router.add("ALL", pattern, [...methods]);
    }
    const allowed = new Set<string>();
    for (const [methods] of router.match("ALL", path)[0]) for (const m of methods) allowed.add(m);
    return [...allowed];
  };
  return (c) => {
    const path = new URL(c.req.url).pathname;
    const allowed = allowedMethods(path);
    if (allowed.length === 0 || allowed.includes(c.req.method)) {
      return errorResponse(c, ApiError.notFound(`${c.req.method} ${path}`));
    }
    return errorResponse(
      c,
      new ApiError(
        "methodNotAllowed",
        `${c.req.method} is not allowed here; allowed: ${allowed.join(", ")}`,
        {
          headers: { Allow: allowed.join(", ") },
        },
      ),
    );
  };
}

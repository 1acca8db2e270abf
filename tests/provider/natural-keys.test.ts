/**
 * Natural keys (a hostport is one edge's, a match one route's on its edge): their one spelling in
 * the contract, the plans that give one up, and the board on which a run's creates wait for an
 * object that gives one up (provider/lifecycle/releases). Through the service and the engine:
 * tests/reliability/invariants.test.ts and create-identity.test.ts.
 */
import { canonicalHostport, edgeCreateSchema } from "../../sdk/contract";
import { planEdge } from "../../provider/plan/edge";
import { planRoute } from "../../provider/plan/route";
import { ReleaseBoard } from "../../provider/lifecycle/releases";
import { UNKNOWN } from "../../provider/model/unknown";
import { desired } from "./support";

describe("a hostport's one spelling", () => {
  test.each([
    ["h.example:443", "h.example:443"],
    ["h.example:0443", "h.example:443"],
    ["H.EXAMPLE:00443", "h.example:443"],
    ["Api.Shop.Example.COM:8080", "api.shop.example.com:8080"],
  ])("%s is %s", (written, one) => {
    expect(canonicalHostport(written)).toBe(one);
    expect(edgeCreateSchema.parse({ hostports: [written] }).hostports).toEqual([one]);
  });

  test("two spellings of one hostport in one request are one hostport twice", () => {
    const parsed = edgeCreateSchema.safeParse({ hostports: ["h.example:443", "H.Example:0443"] });
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({ path: ["hostports", 1], message: "appears twice" }),
    ]);
  });

  test("what is not a hostport stays refused, spelled any way", () => {
    for (const bad of [
      "h.example.:443",
      "h.example:0",
      "h.example:000000443",
      "h.example:65536",
      "hé.example:443",
    ]) {
      expect([bad, edgeCreateSchema.safeParse({ hostports: [bad] }).success]).toEqual([bad, false]);
    }
  });
});

describe("plans that give a natural key up", () => {
  const edge = (hostports: string[], description = "") => ({ description, metadata: "", hostports });

  test("an edge holding hostports is deleted before its replacement, and releases them", () => {
    for (const next of [edge(["n:443"]), edge(["m:443", "n:443"]), edge(["m:443"], "other")]) {
      const plan = planEdge(edge(["m:443"]), next);
      expect([plan.replaces.length > 0, plan.deleteBeforeReplace, plan.releases]).toEqual([true, true, true]);
    }
    // Unknown hostports (a preview): the same.
    expect(planEdge(edge(["m:443"]), { ...edge([]), hostports: UNKNOWN as never }).deleteBeforeReplace).toBe(
      true,
    );
  });

  test("an edge without hostports holds nothing: replaced create-before-delete; no change, nothing", () => {
    const plan = planEdge(edge([]), edge(["n:443"]));
    expect([plan.deleteBeforeReplace, plan.releases]).toEqual([false, false]);
    expect(planEdge(edge(["m:443"]), edge(["m:443"])).releases).toBe(false);
  });

  test("a route whose match changes in place releases the old one; other changes do not", () => {
    const current = desired({ match: "/a" });
    expect(planRoute(current, desired({ match: "/b" })).releases).toBe(true);
    expect(planRoute(current, desired({ match: "/a", matchType: "exact_path" })).releases).toBe(true);
    expect(planRoute(current, desired({ match: "/a", description: "x" })).releases).toBeUndefined();
  });
});

describe("the release board", () => {
  test("a create waits for an announced object's settling, then goes on", async () => {
    const board = new ReleaseBoard();
    board.announce("edghts_one");
    const waiting = board.view(5_000, 0).awaitRelease("edghts_one");
    let done = false;
    void waiting.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    board.settle("edghts_one");
    await expect(waiting).resolves.toBe("released");
  });

  test("an object announced within the grace is waited for (the engine diffs it just after)", async () => {
    const board = new ReleaseBoard();
    const waiting = board.view(5_000, 1_000).awaitRelease("edghts_one");
    setTimeout(() => board.announce("edghts_one"), 20);
    setTimeout(() => board.settle("edghts_one"), 40);
    await expect(waiting).resolves.toBe("released");
  });

  test("an object nobody announces is not leaving; one never settled times out", async () => {
    const board = new ReleaseBoard();
    await expect(board.view(5_000, 10).awaitRelease("edghts_foreign")).resolves.toBe("not-leaving");
    board.announce("edghts_stuck");
    await expect(board.view(30, 10).awaitRelease("edghts_stuck")).resolves.toBe("timed-out");
  });
});

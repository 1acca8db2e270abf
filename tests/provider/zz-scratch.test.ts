import { routeCreateSchema } from "../../sdk/contract";
import { checkAgainst } from "../../provider/model/check";
const c = (n: any) => checkAgainst(routeCreateSchema, n, { edgeId: true, adopt: true });
test("x", () => {
  const out: any[] = [];
  out.push(c({ edgeId: "e1", matchType: "exact_path", match: "/", requestHeaders: { add: { "X-A": "1", "x-a": "2" } } }).failures);
  out.push(c({ edgeId: "e1", matchType: "exact_path", match: "/", requestHeaders: { add: { "X-A": "1", "x-a": "2" }, remove: ["bad name"] } }).failures);
  out.push(c({ edgeId: "e1", matchType: "exact_path", match: "/", requestHeaders: { add: { "X-A": "1", "x-a": "2" } }, circuitBreaker: {numBuckets: 0} }).failures);
  for (const d of [100, 1000, 3000, 10000, 50000]) {
    let deep: any = { x: 1 };
    for (let i = 0; i < d; i++) deep = { a_b: deep, c: [1, null, "x"] };
    const t = Date.now();
    try { out.push([d, c({ edgeId: "e1", matchType: "exact_path", match: "/", circuitBreaker: deep }).failures.length]); } catch (e) { out.push(["THROW deep", d, String(e)]); }
    out.push(Date.now() - t);
  }
  console.log(JSON.stringify(out, null, 1));
});

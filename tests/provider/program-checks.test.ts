/**
 * What a program checks of a resource's inputs before the Node.js SDK serializes them
 * (provider/resources/program-checks.ts, both faces): the contract's text rule on every string,
 * a map's keys included, named by the path the program wrote; values given as Outputs and
 * Promises checked when they resolve, their secrecy kept; and, where asked (the dynamic face), a
 * private key in an input that is not secret.
 */
import * as pulumi from "@pulumi/pulumi";
import { textProblem } from "../../sdk/contract/text";
import { checkedInputs } from "../../provider/resources/program-checks";

const KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/**
 * The value an Output settles to (its own promise: the SDK's internal), every promise it derives
 * handled at once, as the SDK's serialization handles them in a program: a check that fails
 * rejects them all. A Promise as it is.
 */
function settled(value: unknown): Promise<unknown> {
  if (!pulumi.Output.isInstance(value)) return Promise.resolve(value);
  const call = (name: string): Promise<unknown> => {
    const f: unknown = Reflect.get(value, name);
    if (typeof f !== "function") throw new Error(`an Output without ${name}`);
    return Promise.resolve(Reflect.apply(f, value, []));
  };
  for (const p of [Reflect.get(value, "isKnown"), Reflect.get(value, "isSecret"), call("allResources")])
    if (p instanceof Promise) p.catch(() => undefined);
  return call("promise");
}

const problemOf = (run: () => unknown): string => {
  try {
    run();
  } catch (e) {
    expect(pulumi.RunError.isInstance(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error("no failure");
};

test("a plain string that the API does not keep fails at once, naming the resource, the input and the rule", () => {
  for (const [text, offset] of [
    ["lone \ud800 here", 5],
    ["\udfff first", 0],
    ["nul \u0000 here", 4],
  ] as const) {
    const message = problemOf(() => checkedInputs("HttpsEdge", "web", { description: text }));
    expect(message).toBe(`HttpsEdge "web": input description ${textProblem(text)!}. Nothing was sent.`);
    expect(message).toContain(`at UTF-16 offset ${offset}`);
    // Never a stack the CLI would format: a RunError's message is all it prints.
    expect(() => checkedInputs("HttpsEdge", "web", { description: text })).toThrow(
      expect.objectContaining({ stack: message }),
    );
  }
});

test("nested inputs are named by the path the program wrote: fields, list items, a map's keys and values", () => {
  const bad = "\ud83d"; // the first half of 😀, alone
  const cases: [Record<string, unknown>, string][] = [
    [{ backend: { backendId: `b${bad}` } }, "input backend.backendId"],
    [{ hostports: ["ok.example.com:443", `x${bad}:443`] }, "input hostports[1]"],
    [{ requestHeaders: { add: { "X-Ok": "1", "X-Id": `v${bad}` } } }, 'input requestHeaders.add["X-Id"]'],
    [
      { requestHeaders: { add: { [`X-${bad}`]: "v" } } },
      `input requestHeaders.add key ${JSON.stringify(`X-${bad}`)}`,
    ],
    [
      { oauth: { provider: { google: { emailDomains: ["a.example", `${bad}`] } } } },
      "input oauth.provider.google.emailDomains[1]",
    ],
  ];
  for (const [inputs, named] of cases) {
    expect(problemOf(() => checkedInputs("HttpsEdgeRoute", "api", inputs))).toMatch(
      new RegExp(
        `^HttpsEdgeRoute "api": ${named.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} must be well-formed Unicode`,
      ),
    );
  }
});

test("text the API keeps passes unchanged: whole characters, controls, noncharacters; values of other kinds too", async () => {
  const inputs = {
    description: "emoji 😀, bidi \u202e, tab \t, U+FFFF \uffff, private use \ue000",
    hostports: ["a.example.com:443"],
    circuitBreaker: { numBuckets: 10, enabled: true },
    metadata: undefined,
    nothing: null,
    later: pulumi.output({ nested: ["fine 😀"] }),
    promised: Promise.resolve("fine"),
  };
  const checked = checkedInputs("HttpsEdgeRoute", "api", inputs);
  expect({ ...checked, later: undefined, promised: undefined }).toEqual({
    ...inputs,
    later: undefined,
    promised: undefined,
  });
  expect(await settled(checked.later)).toEqual({ nested: ["fine 😀"] });
  expect(await checked.promised).toBe("fine");
});

test("an Output is checked when it resolves, its nested values too; the Output keeps its secrecy", async () => {
  const checked = checkedInputs("HttpsEdgeRoute", "api", {
    description: pulumi.output("lone \ud800 here"),
    backend: pulumi.output({ backendId: pulumi.output("x\u0000y") }),
    oidc: pulumi.secret({ issuer: "https://id.example.com", clientId: "c", clientSecret: "s" }),
  });
  const [description, backend] = [settled(checked.description), settled(checked.backend)];
  await expect(description).rejects.toThrow(
    'HttpsEdgeRoute "api": input description must be well-formed Unicode',
  );
  await expect(backend).rejects.toThrow('HttpsEdgeRoute "api": input backend.backendId must not hold U+0000');
  expect(pulumi.Output.isInstance(checked.oidc)).toBe(true);
  expect(await pulumi.isSecret(checked.oidc as pulumi.Output<unknown>)).toBe(true);
});

test("a Promise is checked when it resolves", async () => {
  const checked = checkedInputs("TlsEdge", "db", { description: Promise.resolve("a\udc00") });
  await expect(checked.description).rejects.toThrow(
    'TlsEdge "db": input description must be well-formed Unicode',
  );
});

test("plaintextKeys (the dynamic face): a private key in an input that is not secret is refused, wherever it is", async () => {
  const dynamic = { plaintextKeys: true };
  expect(problemOf(() => checkedInputs("HttpsEdge", "web", { metadata: `${CERT}${KEY}` }, dynamic))).toMatch(
    /^HttpsEdge "web": input metadata holds a private key in plaintext, and the engine would save it in the state as it is: make it a secret \(pulumi\.secret/,
  );
  expect(
    problemOf(() => checkedInputs("HttpsEdgeRoute", "api", { saml: { idpMetadata: KEY } }, dynamic)),
  ).toContain("input saml.idpMetadata holds a private key in plaintext");
  // Given as an Output that is not secret: refused when it resolves.
  const plain = checkedInputs("HttpsEdge", "web", { description: pulumi.output(KEY) }, dynamic);
  await expect(settled(plain.description)).rejects.toThrow(
    "input description holds a private key in plaintext",
  );
  // Secret: kept, as a secret (the state encrypts it).
  const secret = checkedInputs(
    "HttpsEdgeRoute",
    "api",
    { webhookVerification: pulumi.secret({ provider: "github", secret: KEY }) },
    dynamic,
  );
  expect(await settled(secret.webhookVerification)).toEqual({ provider: "github", secret: KEY });
  // Without the option (the packaged face, whose plugin sees secrets and refuses it there).
  expect(() => checkedInputs("HttpsEdge", "web", { metadata: KEY })).not.toThrow();
});

/**
 * Who made a drift (provider/lifecycle/attribution): the newest event since the stack's last write
 * that changed the field, unless the trail cannot say (a truncated event first, a value the event
 * did not record). Through the engine: tests/engine/drift-author and hostile-reader.
 */
import type { AuditEvent } from "../../sdk/contract";
import { authorOf, redactedSecretPaths } from "../../provider/lifecycle/attribution";

let seq = 100;
const event = (key: string, changes: AuditEvent["changes"], truncated = false): AuditEvent => ({
  id: `aud_${seq--}`,
  time: "2026-11-26T12:00:00.000Z",
  operation: "update_route",
  object_kind: "route",
  object_id: "edghtsrt_1",
  edge_id: "edghts_1",
  key,
  request_id: `op_${key}`,
  changes,
  truncated,
});
const now = {
  backend: { backend_id: "bkd_3" },
  description: "d",
  request_headers: { add: { "X-Target": "v3" } },
};

describe("the author of a drifted field", () => {
  test("is the newest event that changed it, or one above or below it", () => {
    const events = [
      event("mallory", { description: { before: "c", after: "d" } }),
      event("writer", { "backend.backend_id": { before: "bkd_2", after: "bkd_3" } }),
      event("older", { "backend.backend_id": { before: "bkd_1", after: "bkd_2" } }),
    ];
    expect(authorOf(events, "backend.backend_id", now)?.key).toBe("writer");
    expect(authorOf(events, "backend", now)?.key).toBe("writer");
    expect(authorOf(events, "description", now)?.key).toBe("mallory");
  });

  test("is unknown when a truncated event comes first, never an older event's key", () => {
    const events = [
      event("mallory", { "request_headers.add.X-Other": { after: "[truncated]" } }, true),
      event("writer", { "request_headers.add.X-Target": { before: "v2", after: "v3" } }),
    ];
    expect(authorOf(events, "request_headers.add.X-Target", now)).toBeUndefined();
  });

  test("is unknown when the event recorded another value than the one found", () => {
    const events = [event("writer", { "backend.backend_id": { before: "bkd_1", after: "bkd_2" } })];
    expect(authorOf(events, "backend.backend_id", now)).toBeUndefined();
    // Values the event could not record (elided, or a secret) do not make it unknown.
    for (const after of ["[truncated]", "[redacted]"]) {
      const e = [event("writer", { "backend.backend_id": { before: "bkd_1", after } })];
      expect(authorOf(e, "backend.backend_id", now)?.key).toBe("writer");
    }
  });

  test("is unknown when no event since the stack's last write changed it", () => {
    expect(
      authorOf([event("x", { description: { after: "d" } })], "backend.backend_id", now),
    ).toBeUndefined();
    expect(authorOf([], "description", now)).toBeUndefined();
  });
});

test("the secret leaves answered redacted, by wire path", () => {
  expect(
    redactedSecretPaths({
      webhook_verification: { provider: "github", secret: "[redacted]" },
      oauth: {
        provider: { github: { client_id: "c", client_secret: "[redacted]" }, google: { client_secret: "" } },
      },
      oidc: { client_secret: "plain" },
    }),
  ).toEqual(["webhook_verification.secret", "oauth.provider.github.client_secret"]);
});

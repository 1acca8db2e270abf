import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import { createSelfSignedCertificate } from "../service/x509";

const DAY_MS = 24 * 60 * 60 * 1000;
const hasOpenssl = !spawnSync("openssl", ["version"]).error;

describe("createSelfSignedCertificate", () => {
  it("produces a parseable self-signed certificate whose key matches", () => {
    const { certificatePem, privateKeyPem } = createSelfSignedCertificate({ commonName: "example.test" });
    expect(certificatePem.startsWith("-----BEGIN CERTIFICATE-----\n")).toBe(true);
    expect(certificatePem.endsWith("-----END CERTIFICATE-----\n")).toBe(true);
    for (const line of certificatePem.trim().split("\n")) expect(line.length).toBeLessThanOrEqual(64);

    const cert = new crypto.X509Certificate(certificatePem);
    expect(cert.subject).toBe("CN=example.test");
    expect(cert.issuer).toBe("CN=example.test");
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(crypto.createPrivateKey(privateKeyPem))).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
  });

  it("sets validity around now and validDays later", () => {
    const now = new Date();
    const cert = new crypto.X509Certificate(
      createSelfSignedCertificate({ commonName: "v", validDays: 30, now }).certificatePem,
    );
    const from = new Date(cert.validFrom).getTime();
    const to = new Date(cert.validTo).getTime();
    expect(from).toBeLessThanOrEqual(now.getTime());
    expect(from).toBeGreaterThan(now.getTime() - 10 * 60 * 1000);
    expect(to).toBeGreaterThan(now.getTime());
    expect(Math.abs(to - (now.getTime() + 30 * DAY_MS))).toBeLessThan(2000);
  });

  it("defaults to 3650 days and uses GeneralizedTime past 2049", () => {
    const now = new Date("2045-06-01T12:00:00Z");
    const cert = new crypto.X509Certificate(
      createSelfSignedCertificate({ commonName: "g", now }).certificatePem,
    );
    expect(new Date(cert.validFrom).toISOString()).toBe("2045-06-01T11:55:00.000Z");
    expect(new Date(cert.validTo).getTime()).toBe(now.getTime() + 3650 * DAY_MS);
  });

  it("gives different serials and keys on each call", () => {
    const a = createSelfSignedCertificate({ commonName: "same" });
    const b = createSelfSignedCertificate({ commonName: "same" });
    const ca = new crypto.X509Certificate(a.certificatePem);
    const cb = new crypto.X509Certificate(b.certificatePem);
    expect(ca.serialNumber).not.toBe(cb.serialNumber);
    expect(a.privateKeyPem).not.toBe(b.privateKeyPem);
    expect(ca.publicKey.equals(cb.publicKey)).toBe(false);
  });

  it("round-trips non-ASCII and long common names (long-form DER lengths)", () => {
    const nonAscii = new crypto.X509Certificate(
      createSelfSignedCertificate({ commonName: "route-é" }).certificatePem,
    );
    expect(nonAscii.subject).toBe("CN=route-é");
    expect(nonAscii.verify(nonAscii.publicKey)).toBe(true);

    const longName = "x".repeat(300); // forces two-byte long-form lengths inside the name
    const long = new crypto.X509Certificate(
      createSelfSignedCertificate({ commonName: longName }).certificatePem,
    );
    expect(long.subject).toBe(`CN=${longName}`);
    expect(long.verify(long.publicKey)).toBe(true);
  });

  it("rejects invalid options", () => {
    expect(() => createSelfSignedCertificate({ commonName: "" })).toThrow();
    expect(() => createSelfSignedCertificate({ commonName: "a", validDays: 0 })).toThrow();
  });

  (hasOpenssl ? it : it.skip)("is accepted by openssl x509", () => {
    const { certificatePem } = createSelfSignedCertificate({ commonName: "openssl.test" });
    const res = spawnSync("openssl", ["x509", "-noout", "-text"], {
      input: certificatePem,
      encoding: "utf8",
    });
    expect(res.status).toBe(0);
    expect(res.stdout).toContain("ecdsa-with-SHA256");
    expect(res.stdout).toContain("X509v3 Basic Constraints: critical");
    expect(res.stdout).toContain("CA:FALSE");
    expect(res.stdout).toContain("X509v3 Key Usage: critical");
    expect(res.stdout).toContain("Digital Signature");
    expect(res.stdout).toContain("Version: 3 (0x2)");
  });
});

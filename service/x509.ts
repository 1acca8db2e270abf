/**
 * Minimal self-signed X.509 v3 certificate generator.
 *
 * Node can parse certificates (crypto.X509Certificate) but cannot create them, and we do not want a
 * dependency just for that. So we build the DER by hand: a tiny ASN.1 DER encoder, an EC P-256 key
 * from node:crypto, and an ecdsa-with-SHA256 signature over the TBSCertificate (RFC 5280 §4.1).
 */
import * as crypto from "node:crypto";

export interface SelfSignedCertificate {
  certificatePem: string;
  privateKeyPem: string;
}

// ---- ASN.1 DER encoding (only what a certificate needs) ----

/** DER length: short form below 128, otherwise 0x80|n followed by n big-endian length bytes. */
function derLength(len: number): Buffer {
  if (len < 0x80) return Buffer.from([len]);
  const bytes: number[] = [];
  for (let n = len; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** Tag-length-value with a single-byte tag. */
function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const utf8String = (s: string): Buffer => tlv(0x0c, Buffer.from(s, "utf8"));
/** Context-specific, constructed, explicit tag [n]. */
const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);
/** BIT STRING with a leading "unused bits" count (0 for whole-byte payloads such as signatures). */
const bitString = (content: Buffer, unusedBits = 0): Buffer =>
  tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));
const booleanTrue = (): Buffer => tlv(0x01, Buffer.from([0xff]));

/** Non-negative INTEGER from big-endian bytes: minimal encoding, plus a 0x00 pad if the top bit is set. */
function unsignedInteger(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  let body = bytes.subarray(i);
  if (body.length === 0) body = Buffer.from([0]);
  if (body.readUInt8(0) & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(0x02, body);
}

/** OBJECT IDENTIFIER: first two arcs packed as 40*a+b, each arc in base-128 with continuation bits. */
function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split(".").map(Number);
  if (first === undefined || second === undefined) throw new Error(`OID ${dotted} has fewer than two arcs`);
  const values = [first * 40 + second, ...rest];
  const out: number[] = [];
  for (const v of values) {
    const chunk = [v & 0x7f];
    for (let n = Math.floor(v / 128); n > 0; n = Math.floor(n / 128)) chunk.unshift((n & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** RFC 5280 §4.1.2.5: UTCTime for years up to 2049, GeneralizedTime from 2050; always UTC, whole seconds. */
function time(d: Date): Buffer {
  const digits = d
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:T]/g, ""); // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}

// ---- Certificate ----

const OID_ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";
const OID_COMMON_NAME = "2.5.4.3";
const OID_BASIC_CONSTRAINTS = "2.5.29.19";
const OID_KEY_USAGE = "2.5.29.15";

/** Extension ::= SEQUENCE { extnID, critical BOOLEAN, extnValue OCTET STRING (DER of the value) }. */
const criticalExtension = (id: string, value: Buffer): Buffer =>
  sequence(oid(id), booleanTrue(), octetString(value));

/** 16 random bytes, top bit cleared so the serial is positive, and never zero (RFC 5280 §4.1.2.2). */
function randomSerial(): Buffer {
  for (;;) {
    const bytes = crypto.randomBytes(16);
    bytes.writeUInt8(bytes.readUInt8(0) & 0x7f, 0);
    if (bytes.some((b) => b !== 0)) return bytes;
  }
}

export function createSelfSignedCertificate(opts: {
  commonName: string;
  validDays?: number;
  now?: Date;
}): SelfSignedCertificate {
  const { commonName, validDays = 3650, now = new Date() } = opts;
  if (!commonName) throw new Error("commonName must be a non-empty string");
  if (!Number.isFinite(validDays) || validDays <= 0) throw new Error("validDays must be a positive number");

  const { publicKey, privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" });

  // ecdsa-with-SHA* AlgorithmIdentifiers have absent (not NULL) parameters (RFC 5758 §3.2).
  const signatureAlgorithm = sequence(oid(OID_ECDSA_WITH_SHA256));
  const name = sequence(set(sequence(oid(OID_COMMON_NAME), utf8String(commonName))));
  // Backdate a little so a peer with a slightly slow clock does not see a not-yet-valid certificate.
  const notBefore = new Date(now.getTime() - 5 * 60 * 1000);
  const notAfter = new Date(now.getTime() + validDays * 24 * 60 * 60 * 1000);

  const extensions = sequence(
    // BasicConstraints with cA omitted: DER leaves out DEFAULT values, so cA=false is an empty SEQUENCE.
    criticalExtension(OID_BASIC_CONSTRAINTS, sequence()),
    // KeyUsage digitalSignature is bit 0 (0x80); DER drops trailing zero bits, leaving 7 unused bits.
    criticalExtension(OID_KEY_USAGE, bitString(Buffer.from([0x80]), 7)),
  );

  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))), // version v3 (encoded as 2)
    unsignedInteger(randomSerial()),
    signatureAlgorithm,
    name, // issuer
    sequence(time(notBefore), time(notAfter)),
    name, // subject = issuer: self-signed
    publicKey.export({ type: "spki", format: "der" }), // SubjectPublicKeyInfo is already DER
    explicit(3, extensions),
  );

  // For EC keys Node produces a DER-encoded Ecdsa-Sig-Value, which is exactly what X.509 expects.
  const signature = crypto.sign("sha256", tbs, privateKey);
  const certificate = sequence(tbs, signatureAlgorithm, bitString(signature));

  const base64Lines = certificate.toString("base64").match(/.{1,64}/g) ?? [];
  return {
    certificatePem: `-----BEGIN CERTIFICATE-----\n${base64Lines.join("\n")}\n-----END CERTIFICATE-----\n`,
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

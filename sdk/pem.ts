/**
 * PEM material, as both ends of a TLS connection read it: the service its certificate, key and
 * client CAs (`serve --tls-*`), a client its CA and client certificate (`edge:caCertificate`...).
 * One reading, one set of checks, every failure told in words that name where the material came
 * from (a flag, a setting, a file) and what to give instead.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { errorField } from "./contract/errors";

/** Material that cannot be used: `source` names where it came from (`--tls-cert /etc/edge/cert.pem`). */
export class PemError extends Error {
  constructor(
    readonly source: string,
    readonly problem: string,
  ) {
    super(`${source}: ${problem}`);
    this.name = "PemError";
  }
}

/** The text of a PEM file; a file that cannot be read is a PemError saying why and what to do. */
export function readPemFile(file: string, source: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = errorField(e, "code");
    throw new PemError(
      source,
      code === "ENOENT"
        ? "no such file"
        : code === "EACCES" || code === "EPERM"
          ? `cannot be read by this process (${processUser()}): permission denied; make it readable by the user the program runs as`
          : code === "EISDIR"
            ? "is a directory: give the PEM file itself"
            : `cannot be read (${typeof code === "string" ? code : String(e)})`,
    );
  }
  if (text.trim() === "") throw new PemError(source, "is empty");
  return text;
}

const processUser = () => (process.getuid ? `uid ${process.getuid()}` : `pid ${process.pid}`);

/** The labels of a text's PEM blocks (`CERTIFICATE`, `PRIVATE KEY`...) with their text, in order. */
function pemBlocks(text: string): { label: string; pem: string }[] {
  const blocks: { label: string; pem: string }[] = [];
  for (const m of text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)) {
    blocks.push({ label: m[1] ?? "", pem: m[0] });
  }
  return blocks;
}

/** Whether `value` is PEM text rather than a file's path. */
export const isPemText = (value: string): boolean => value.includes("-----BEGIN ");

/**
 * The start of a PEM private key of any kind: PKCS#8 (`PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`), the
 * older `RSA`, `EC` and `DSA` forms, OpenSSH's, PGP's (`PGP PRIVATE KEY BLOCK`). The BEGIN line
 * alone decides: a truncated or damaged block still gives the key away.
 */
const PRIVATE_KEY_BEGIN = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z0-9 ]*-----/;

/**
 * Whether `text` holds a private key in PEM, anywhere in it (a combined file holds a certificate
 * and its key): the one test of where a key must not be kept in clear (provider/config.ts).
 */
export const holdsPrivateKey = (text: string): boolean => PRIVATE_KEY_BEGIN.test(text);

/** What a certificate is, for people: its subject, its names, its issuer. */
export function describeCertificate(cert: X509Certificate): string {
  const subject = cert.subject.replace(/\n/g, ", ");
  const names = cert.subjectAltName ? ` (${cert.subjectAltName})` : "";
  const issuer =
    cert.issuer === cert.subject ? "self-signed" : `issued by ${cert.issuer.replace(/\n/g, ", ")}`;
  return `${subject}${names}, ${issuer}`;
}

/** When a certificate stops being valid, with the days left from `now`. */
export function validUntil(cert: X509Certificate, now = new Date()): string {
  const end = new Date(cert.validTo);
  const days = Math.floor((end.getTime() - now.getTime()) / 86_400_000);
  return `valid until ${end.toISOString()} (${days === 1 ? "1 day" : `${days} days`} from now)`;
}

/**
 * The certificates of a PEM text, each parsed and valid at `now` (a leaf first, then its chain,
 * or a list of CAs). `renew` says what to do about one that expired (the service's words differ
 * from a client's).
 */
export function certificatesOf(
  text: string,
  source: string,
  opts: { now?: Date; renew: string },
): X509Certificate[] {
  const blocks = pemBlocks(text);
  const pems = blocks.filter((b) => b.label === "CERTIFICATE");
  if (pems.length === 0) {
    throw new PemError(
      source,
      blocks.some((b) => b.label.endsWith("PRIVATE KEY"))
        ? "holds a private key, not a certificate: give the certificate (-----BEGIN CERTIFICATE-----) here and its key where the key goes"
        : "holds no PEM certificate (a block -----BEGIN CERTIFICATE-----): give it in PEM (openssl x509 -inform der -in cert.der -out cert.pem)",
    );
  }
  const now = opts.now ?? new Date();
  return pems.map(({ pem }, i) => {
    const which = pems.length === 1 ? "its certificate" : `certificate ${i + 1} of ${pems.length}`;
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(pem);
    } catch (e) {
      throw new PemError(source, `${which} cannot be parsed (${String(errorField(e, "message"))})`);
    }
    if (new Date(cert.validTo) < now) {
      throw new PemError(
        source,
        `${which} (${describeCertificate(cert)}) expired on ${new Date(cert.validTo).toISOString()}: ${opts.renew}`,
      );
    }
    if (new Date(cert.validFrom) > now) {
      throw new PemError(
        source,
        `${which} (${describeCertificate(cert)}) is not valid before ${new Date(cert.validFrom).toISOString()}: check this machine's clock`,
      );
    }
    return cert;
  });
}

/** The private key of a PEM text (unencrypted). */
export function privateKeyOf(text: string, source: string): KeyObject {
  const blocks = pemBlocks(text);
  const key = blocks.find((b) => b.label.endsWith("PRIVATE KEY"));
  if (key === undefined) {
    throw new PemError(
      source,
      blocks.some((b) => b.label === "CERTIFICATE")
        ? "holds a certificate, not a private key: give the certificate's key (-----BEGIN PRIVATE KEY-----) here"
        : "holds no PEM private key (a block -----BEGIN PRIVATE KEY-----)",
    );
  }
  const encrypted =
    "is encrypted: give it unencrypted (openssl pkey -in key.pem -out plain.pem), readable only by its user";
  if (key.label === "ENCRYPTED PRIVATE KEY" || /Proc-Type: 4,ENCRYPTED/.test(key.pem)) {
    throw new PemError(source, encrypted);
  }
  try {
    return createPrivateKey(key.pem);
  } catch (e) {
    throw new PemError(source, `its private key cannot be parsed (${String(errorField(e, "message"))})`);
  }
}

/**
 * That `key` is the key of `cert`, else a PemError on `keySource` naming the certificate: a key
 * and a certificate from two rotations are the usual mistake.
 */
export function checkKeyMatches(
  cert: X509Certificate,
  key: KeyObject,
  keySource: string,
  certSource: string,
): void {
  if (!cert.checkPrivateKey(key)) {
    throw new PemError(
      keySource,
      `is not the key of the certificate of ${certSource} (${describeCertificate(cert)}): give the key that certificate was issued for`,
    );
  }
}

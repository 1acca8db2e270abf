/**
 * Real certificates for the TLS tests, made with openssl in a temp directory: a private CA, server
 * certificates (127.0.0.1 and localhost, an expired one, one for another host), client
 * certificates of that CA and of another. openssl comes with Debian's postgresql (its ssl-cert
 * dependency), which scripts/provision-postgres.sh installs for the service suites.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";

/** A certificate and its key, as files. */
export interface Issued {
  cert: string;
  key: string;
  /** The certificate's PEM text. */
  certPem: string;
  keyPem: string;
  /** Its SHA-256 fingerprint, as node's X509Certificate says it (to tell which one a handshake got). */
  fingerprint: string;
}

export interface Pki {
  dir: string;
  /** The CA's certificate file. */
  ca: string;
  caPem: string;
  /** A server certificate for 127.0.0.1 and localhost, valid for 30 days. */
  server: Issued;
  /** Issues another certificate of the CA (or of the other CA). */
  issue(
    name: string,
    opts?: { days?: number; hosts?: string[]; client?: boolean; foreign?: boolean },
  ): Issued;
  /** A second CA's certificate file: a client certificate of it is foreign to the first. */
  otherCa: string;
  cleanup(): void;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync("openssl", args, { cwd, stdio: "pipe" });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new Error(
        "openssl is not installed: apt-get install -y openssl (scripts/provision-postgres.sh brings it with PostgreSQL)",
      );
    }
    throw new Error(`openssl ${args.join(" ")} failed: ${String((e as { stderr?: Buffer }).stderr ?? e)}`);
  }
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

/** A fresh PKI in a temp directory (`edge-pki-*`); `cleanup` removes it. */
export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), "edge-pki-"));
  const makeCa = (name: string) => {
    openssl(
      [
        "req",
        "-x509",
        ...EC,
        "-keyout",
        `${name}.key`,
        "-out",
        `${name}.pem`,
        "-subj",
        `/CN=${name}`,
        "-days",
        "30",
      ],
      dir,
    );
  };
  makeCa("test-ca");
  makeCa("other-ca");
  let serial = 1;
  const issue: Pki["issue"] = (name, opts = {}) => {
    const ca = opts.foreign ? "other-ca" : "test-ca";
    const hosts = opts.hosts ?? ["127.0.0.1", "localhost"];
    const san = hosts.map((h) => (/^[\d.]+$/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
    const ext = join(dir, `${name}.ext`);
    writeFileSync(
      ext,
      opts.client ? "extendedKeyUsage=clientAuth\n" : `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`,
    );
    openssl(["req", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`], dir);
    openssl(
      [
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        `${ca}.pem`,
        "-CAkey",
        `${ca}.key`,
        "-set_serial",
        String(serial++),
        "-days",
        String(opts.days ?? 30),
        "-extfile",
        ext,
        "-out",
        `${name}.pem`,
      ],
      dir,
    );
    const cert = join(dir, `${name}.pem`);
    const key = join(dir, `${name}.key`);
    const certPem = readFileSync(cert, "utf8");
    return {
      cert,
      key,
      certPem,
      keyPem: readFileSync(key, "utf8"),
      fingerprint: new X509Certificate(certPem).fingerprint256,
    };
  };
  const ca = join(dir, "test-ca.pem");
  return {
    dir,
    ca,
    caPem: readFileSync(ca, "utf8"),
    server: issue("server"),
    issue,
    otherCa: join(dir, "other-ca.pem"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

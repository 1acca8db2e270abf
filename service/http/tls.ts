/**
 * The standalone server's TLS: its certificate (a chain allowed), the certificate's key and,
 * for mutual TLS, the CAs whose client certificates it accepts, read from PEM files and checked
 * before anything listens; then loaded again whenever the files change (polled, so a file
 * replaced by a rename or a Kubernetes secret's symlink swap is seen as well as one rewritten in
 * place) or on demand (`serve` on SIGHUP), without a restart. A reload only changes what new
 * handshakes get (`setSecureContext`): open connections and their requests go on untouched. Files
 * that cannot be served on a reload leave the certificate in use serving, and say so in the log
 * and in `GET /readyz`'s detail until a reload succeeds.
 */
import type { X509Certificate } from "node:crypto";
import { type Stats, unwatchFile, watchFile } from "node:fs";
import type { Server as HttpsServer } from "node:https";
import { createSecureContext, type SecureContextOptions, type TLSSocket } from "node:tls";
import { errorField } from "../../sdk/contract/errors";
import {
  certificatesOf,
  checkKeyMatches,
  describeCertificate,
  PemError,
  privateKeyOf,
  readPemFile,
  validUntil,
} from "../../sdk/pem";
import type { LogLevel } from "./log";

/** The PEM files a server serves TLS with (`serve --tls-cert --tls-key [--tls-client-ca]`). */
export interface TlsFiles {
  /** The server's certificate, then the intermediates of its chain, if any. */
  certFile: string;
  /** The certificate's private key, unencrypted. */
  keyFile: string;
  /**
   * The CAs that sign the clients' certificates: set, every request but the probes (`/healthz`,
   * `/readyz`) must come over a connection with a certificate one of them signed (mutual TLS),
   * else it is refused with a 401 that says so.
   */
  clientCaFile?: string;
}

/** The oldest protocol served: TLS 1.0 and 1.1 are deprecated (RFC 8996). */
const MIN_VERSION = "TLSv1.2";

/** How often the files are looked at (a `stat` each): rotations come every few weeks. */
const POLL_MS = 1_000;

/** Where each file came from, in the words of `serve`'s options. */
const SOURCE = {
  certFile: "--tls-cert",
  keyFile: "--tls-key",
  clientCaFile: "--tls-client-ca",
} as const satisfies Record<keyof TlsFiles, string>;

/** What a set of files holds, checked: what a secure context is made of, and what to say of it. */
interface TlsMaterial {
  /** The files' texts, to tell a change from a touch. */
  texts: string;
  leaf: X509Certificate;
  clientCas: number;
  context: SecureContextOptions;
  loadedAt: Date;
}

/** The renewal advice of an expired file, at start and on a reload. */
const RENEW = "renew it (a running service loads the renewed file without a restart)";

/** The files read and checked at `now`; a PemError names the file at fault and what is wrong. */
export function loadTls(files: TlsFiles, now = new Date()): TlsMaterial {
  const source = (k: keyof TlsFiles, file: string) => `${SOURCE[k]} ${file}`;
  const cert = readPemFile(files.certFile, source("certFile", files.certFile));
  const key = readPemFile(files.keyFile, source("keyFile", files.keyFile));
  const ca =
    files.clientCaFile && readPemFile(files.clientCaFile, source("clientCaFile", files.clientCaFile));
  const [leaf] = certificatesOf(cert, source("certFile", files.certFile), { now, renew: RENEW });
  if (leaf === undefined) throw new PemError(source("certFile", files.certFile), "holds no certificate");
  checkKeyMatches(
    leaf,
    privateKeyOf(key, source("keyFile", files.keyFile)),
    source("keyFile", files.keyFile),
    files.certFile,
  );
  const clientCas =
    ca && files.clientCaFile
      ? certificatesOf(ca, source("clientCaFile", files.clientCaFile), { now, renew: RENEW }).length
      : 0;
  const context: SecureContextOptions = { cert, key, ca: ca || undefined, minVersion: MIN_VERSION };
  try {
    createSecureContext(context);
  } catch (e) {
    throw new PemError(
      source("certFile", files.certFile),
      `cannot be served with ${files.keyFile} (${String(errorField(e, "message"))})`,
    );
  }
  return { texts: [cert, key, ca ?? ""].join("\0"), leaf, clientCas, context, loadedAt: now };
}

/** A reload's outcome, as the server tells it (`serve` logs it on SIGHUP). */
export type TlsReload = "reloaded" | "unchanged" | "failed";

type Log = (level: LogLevel, line: string) => void;

/** A server's TLS from start to stop: its options, its reloads, what `/readyz` says of them. */
export class ServedTls {
  private current: TlsMaterial;
  /** The last reload that failed, until one succeeds. */
  private failure?: { at: Date; error: string };
  private server?: HttpsServer;
  private pending?: NodeJS.Timeout;
  private readonly watched: string[];

  constructor(
    private readonly files: TlsFiles,
    private readonly log: Log | undefined,
  ) {
    this.current = loadTls(files);
    this.watched = [files.certFile, files.keyFile, ...(files.clientCaFile ? [files.clientCaFile] : [])];
  }

  /**
   * The https server's options. With client CAs the certificate is asked for, and checked, but a
   * handshake without one is not refused: the app answers every request but the probes with a
   * 401 that says what is missing (a refused handshake tells a client nothing it could act on,
   * and orchestrators' HTTPS probes present no certificate).
   */
  serverOptions(): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
    return {
      ...this.current.context,
      requestCert: this.files.clientCaFile !== undefined,
      rejectUnauthorized: false,
    };
  }

  /** Whether requests need a client certificate (mutual TLS). */
  get clientCertificates(): boolean {
    return this.files.clientCaFile !== undefined;
  }

  /** Serving on `server` from now on: what is served is logged, the files are watched. */
  start(server: HttpsServer): void {
    this.server = server;
    const clients = this.clientCertificates
      ? `client certificates required, signed by a CA of ${this.files.clientCaFile} (${this.current.clientCas === 1 ? "1 certificate" : `${this.current.clientCas} certificates`})`
      : "no client certificate asked for";
    this.log?.(
      "info",
      `TLS: serving the certificate of ${this.files.certFile}: ${this.said(this.current)}; ${clients}; the files are watched and loaded again when they change`,
    );
    const changed = (now: Stats, before: Stats) => {
      if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) this.settle();
    };
    for (const file of this.watched) watchFile(file, { interval: POLL_MS, persistent: false }, changed);
    server.on("tlsClientError", (e: Error, socket: TLSSocket) => this.handshakeFailed(e, socket));
  }

  /**
   * Reloads once the files have stopped changing for a while: a rotation that writes the
   * certificate and then the key is loaded once, whole, not half-way as a mismatch.
   */
  private settle(): void {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => this.reload("a file changed"), POLL_MS * 1.5);
    this.pending.unref();
  }

  /** Loads the files again; on a failure the certificate in use stays, and the failure is told. */
  reload(why: string): TlsReload {
    const now = new Date();
    let next: TlsMaterial;
    try {
      next = loadTls(this.files, now);
      if (next.texts !== this.current.texts) this.server?.setSecureContext(next.context);
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      // Told once per problem: a watched file touched again says nothing new (SIGHUP always answers).
      const told = this.failure?.error === error && why !== "SIGHUP";
      this.failure = { at: now, error };
      if (!told)
        this.log?.(
          "error",
          `TLS: reload (${why}) failed, so the certificate loaded at ${this.current.loadedAt.toISOString()} is still served (${this.said(this.current)}): ${error}. Fix the file: it is loaded at its next change, or on SIGHUP`,
        );
      return "failed";
    }
    const failed = this.failure !== undefined;
    this.failure = undefined;
    if (next.texts === this.current.texts) {
      if (failed || why === "SIGHUP") {
        this.log?.(
          "info",
          `TLS: ${why}: the files hold the certificate already served (${this.said(this.current)})`,
        );
      }
      return "unchanged";
    }
    const before = this.current;
    this.current = next;
    this.log?.(
      "info",
      `TLS: reloaded (${why}): new connections get ${this.said(next)}; it replaces ${this.said(before)} (open connections keep it until they close)`,
    );
    return "reloaded";
  }

  /** What `/readyz` adds while the files cannot be loaded (the server still serves). */
  detail(): string | undefined {
    if (!this.failure) return undefined;
    return `TLS: the certificate files could not be reloaded at ${this.failure.at.toISOString()}; the certificate loaded at ${this.current.loadedAt.toISOString()} is still served, ${validUntil(this.current.leaf)}; the reason is in the service's log`;
  }

  stop(): void {
    clearTimeout(this.pending);
    for (const file of this.watched) unwatchFile(file);
  }

  private said(m: TlsMaterial): string {
    return `${describeCertificate(m.leaf)}, ${validUntil(m.leaf)}`;
  }

  private readonly told = new Map<string, number>();

  /**
   * A handshake that failed: told once a minute per kind, for those a client or an operator can
   * act on (a client that does not trust this certificate, one speaking plain HTTP); a connection
   * merely dropped mid-handshake (scanners, TCP health checks) is not.
   */
  private handshakeFailed(e: Error, socket: TLSSocket): void {
    const code = errorField(e, "code");
    const line =
      code === "ERR_SSL_HTTP_REQUEST"
        ? "a client spoke plain HTTP to this TLS port: its URL must begin with https://"
        : /ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN)/.test(String(code))
          ? "a client refused this server's certificate: give clients the CA that signed it (pulumi-edge: edge:caCertificate)"
          : undefined;
    if (line === undefined || typeof code !== "string") return;
    const last = this.told.get(code) ?? 0;
    if (Date.now() - last < 60_000) return;
    this.told.set(code, Date.now());
    this.log?.("warn", `TLS: handshake from ${socket.remoteAddress ?? "a client"} failed (${code}): ${line}`);
  }
}

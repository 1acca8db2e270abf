/**
 * A client's TLS, in one place: from its settings (a CA to trust beyond the system's, a client
 * certificate and its key: PEM text or a file's path each) to the `fetch` the HTTP transport
 * sends with, and from a failed handshake to an error that names the host and the setting that
 * fixes it. A certificate the client cannot accept is never worth a retry: the next attempt
 * meets the same certificate.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as tls from "node:tls";
import { errorField } from "../contract/errors";
import { type ClientTlsNames, type ClientTlsSettings, clientTls } from "../client-tls";

export { type ClientTlsNames, type ClientTlsSettings, TRANSPORT_TLS_NAMES } from "../client-tls";

/**
 * The CAs a connection trusts: Node.js's defaults (its bundled Mozilla list, NODE_EXTRA_CA_CERTS)
 * and the operating system's store, then the given ones. Giving `ca` to a connection replaces
 * the defaults, hence the list. Before Node.js 22.15 (no `getCACertificates`) the system's store
 * cannot be read: without CAs given, Node.js's own defaults serve (undefined); with some, its
 * bundled list and NODE_EXTRA_CA_CERTS stand beside them.
 */
function trusted(given: readonly string[]): string[] | undefined {
  const get: unknown = Reflect.get(tls, "getCACertificates");
  if (typeof get !== "function") {
    if (given.length === 0) return undefined;
    return [...tls.rootCertificates, ...extraCas(), ...given];
  }
  const list = (kind: string): string[] => {
    const certs: unknown = Reflect.apply(get, tls, [kind]);
    return Array.isArray(certs) ? certs.filter((c): c is string => typeof c === "string") : [];
  };
  return [...new Set([...list("default"), ...list("system"), ...given])];
}

/** NODE_EXTRA_CA_CERTS's text (a file of PEM certificates), as Node.js reads it at start: unreadable, none. */
function extraCas(): string[] {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  try {
    return file ? [readFileSync(file, "utf8")] : [];
  } catch {
    return []; // Node.js said so at start
  }
}

/** What the HTTP transport sends: one attempt of a request. */
export interface Attempt {
  method: string;
  headers: Headers;
  body: ArrayBuffer | undefined;
  signal: AbortSignal;
}

/** A transport's fetch: Node.js's own, or one over an agent with the client's TLS settings. */
export type TlsFetch = (url: string, attempt: Attempt) => Promise<Response>;

/**
 * The fetches made, by what their agent is made of: one agent per distinct TLS configuration, its
 * keep-alive connections shared by every transport with that configuration.
 */
const fetches = new Map<string, Promise<TlsFetch>>();

/**
 * The fetch of a transport to `baseUrl`. An http:// URL takes Node.js's own; an https:// one an
 * agent that trusts the system's CAs and `settings.caCertificate`, and presents the client
 * certificate, made on first use (undici, loaded only then). Settings that cannot be used throw
 * here, naming them (../client-tls).
 */
export function fetchFor(baseUrl: string, settings: ClientTlsSettings, names: ClientTlsNames): TlsFetch {
  const m = clientTls(baseUrl, settings, names);
  if (m === undefined) return (target, attempt) => fetch(target, { ...attempt, redirect: "manual" });
  const connect = { ca: trusted(m.ca), cert: m.cert, key: m.key };
  const id = createHash("sha256").update(JSON.stringify(connect)).digest("hex");
  return async (target, attempt) => {
    let send = fetches.get(id);
    if (!send) {
      // undici's own fetch with its own agent: an agent of one undici handed to the fetch of
      // another (Node.js's bundled one) breaks when their majors differ.
      send = import("undici").then(({ Agent, fetch: undiciFetch }): TlsFetch => {
        const dispatcher = new Agent({ connect });
        return async (url, { method, headers, body, signal }) => {
          const sent: [string, string][] = [];
          headers.forEach((value, name) => sent.push([name, value]));
          const answer = await undiciFetch(url, {
            method,
            headers: sent,
            body,
            signal,
            redirect: "manual",
            dispatcher,
          });
          const got: [string, string][] = [];
          answer.headers.forEach((value, name) => got.push([name, value]));
          // Node.js's own Response, as every transport answers: the body read whole (JSON of
          // bounded pages), within the attempt's signal.
          const bytes = await answer.arrayBuffer();
          const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
          return new Response(empty ? null : bytes, {
            status: answer.status,
            statusText: answer.statusText,
            headers: got,
          });
        };
      });
      fetches.set(id, send);
    }
    return (await send)(target, attempt);
  };
}

/** Codes of a service certificate that no CA this client trusts signed. */
const UNTRUSTED: ReadonlySet<string> = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_REJECTED",
  "INVALID_CA",
]);

/**
 * The error of a connection to `baseUrl` that failed in its TLS handshake (`code`, its cause's),
 * naming the host and what fixes it; undefined for any other failure. Never to be retried.
 */
export function tlsFailure(
  error: unknown,
  code: string,
  baseUrl: string,
  settings: ClientTlsSettings,
  names: ClientTlsNames,
): Error | undefined {
  const url = new URL(baseUrl);
  const host = url.host;
  const cause = errorField(error, "cause");
  const why = (text: string) =>
    new Error(`TLS handshake with the edge service at ${host} failed (${code}): ${text}`, { cause: error });
  if (UNTRUSTED.has(code)) {
    const trustedNow = settings.caCertificate
      ? `the system's CAs and those of ${names.caCertificate}`
      : `the system's CAs; ${names.caCertificate} is not set`;
    return why(
      `its certificate is signed by no CA this client trusts (${trustedNow}). Set ${names.caCertificate} to the CA that signed the service's certificate (its PEM text, or a PEM file's path)`,
    );
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return why(
      code === "CERT_HAS_EXPIRED"
        ? "the service's certificate has expired: its operator must renew it (edge-service serve loads the renewed --tls-cert file without a restart); no client setting makes it valid"
        : "the service's certificate is not valid yet: check the clocks of this machine and of the service",
    );
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    const cert = errorField(cause, "cert");
    const names_ = errorField(cert, "subjectaltname");
    return why(
      `the service's certificate is for ${typeof names_ === "string" && names_ !== "" ? names_ : "other names"}, not ${url.hostname}. Set ${names.baseUrl} to a URL with a name the certificate holds, or have the certificate reissued for ${url.hostname}`,
    );
  }
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER" || code === "ERR_SSL_PACKET_LENGTH_TOO_LONG") {
    return why(
      `${host} does not speak TLS: set ${names.baseUrl} to http://${host}${url.pathname === "/" ? "" : url.pathname}, or serve TLS (edge-service serve --tls-cert FILE --tls-key FILE)`,
    );
  }
  if (/ALERT_CERTIFICATE_REQUIRED|ALERT_HANDSHAKE_FAILURE/.test(code) && !settings.clientCertificate) {
    return why(
      `the service asks for a client certificate (mutual TLS) and none was given: set ${names.clientCertificate} and ${names.clientKey}`,
    );
  }
  if (
    /ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED)/.test(
      code,
    )
  ) {
    return why(
      settings.clientCertificate
        ? `the service refused the client certificate of ${names.clientCertificate}: give one signed by a CA the service trusts, valid now`
        : `the service refused the handshake: check ${names.caCertificate} and the service's certificate`,
    );
  }
  if (/^ERR_(SSL|TLS)_/.test(code)) {
    const message = errorField(cause, "message");
    return why(typeof message === "string" && message.trim() !== "" ? message.trim() : code);
  }
  return undefined;
}

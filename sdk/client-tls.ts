/**
 * A client's TLS settings, read and checked before any connection, each failure an error that
 * names the setting (as the caller names it) and what to give instead: the service's URL, a CA to
 * trust beyond the system's, a client certificate and its key (PEM text or a file's path each).
 * What the HTTP transport connects with (./transport/tls.ts), and what the provider checks where a
 * deploy would use the settings: a program, a refresh, a drift check (provider/config.ts). Reads
 * files and parses certificates; no network, no HTTP client.
 */
import { certificatesOf, checkKeyMatches, isPemText, PemError, privateKeyOf, readPemFile } from "./pem";

/** What a client trusts and presents beyond the defaults. */
export interface ClientTlsSettings {
  /**
   * PEM text, or the path of a PEM file: the CA (or CAs) that signed the service's certificate,
   * trusted besides the system's (a private CA).
   */
  caCertificate?: string;
  /** PEM text or a file's path: the certificate presented to a service that asks for one (mutual TLS). */
  clientCertificate?: string;
  /** PEM text or a file's path: that certificate's private key, unencrypted. */
  clientKey?: string;
}

/** How the user names each setting, in errors: a program's options, a provider's config keys. */
export type ClientTlsNames = Record<keyof ClientTlsSettings | "baseUrl", string>;

const SETTINGS = [
  "caCertificate",
  "clientCertificate",
  "clientKey",
] as const satisfies readonly (keyof ClientTlsSettings)[];

/** The names of the transport's own options (httpTransport's `tls` and `baseUrl`). */
export const TRANSPORT_TLS_NAMES: ClientTlsNames = {
  baseUrl: "baseUrl",
  caCertificate: "tls.caCertificate",
  clientCertificate: "tls.clientCertificate",
  clientKey: "tls.clientKey",
};

/** The PEM text of a setting: the value itself, or the file it names. */
function pemOf(value: string, name: string): string {
  return isPemText(value) ? value : readPemFile(value, `${name} (${value})`);
}

/** The settings read and checked: what a connection is made with. */
export interface ClientTlsMaterial {
  /** The CAs given, beside the system's; none: the system's alone. */
  ca: string[];
  cert?: string;
  key?: string;
}

function material(settings: ClientTlsSettings, names: ClientTlsNames): ClientTlsMaterial {
  const renew = "give a CA certificate that is valid now";
  const ca = settings.caCertificate
    ? certificatesOf(pemOf(settings.caCertificate, names.caCertificate), names.caCertificate, { renew }).map(
        (c) => c.toString(),
      )
    : [];
  const { clientCertificate, clientKey } = settings;
  if (clientCertificate === undefined && clientKey === undefined) return { ca };
  if (clientCertificate === undefined || clientKey === undefined) {
    throw new PemError(
      clientCertificate === undefined ? names.clientKey : names.clientCertificate,
      clientCertificate === undefined
        ? `is set without the certificate it is the key of: set ${names.clientCertificate} too`
        : `is set without its private key: set ${names.clientKey} too`,
    );
  }
  const cert = pemOf(clientCertificate, names.clientCertificate);
  const key = pemOf(clientKey, names.clientKey);
  const [leaf] = certificatesOf(cert, names.clientCertificate, {
    renew: "get it renewed by the CA the service trusts",
  });
  if (leaf)
    checkKeyMatches(leaf, privateKeyOf(key, names.clientKey), names.clientKey, names.clientCertificate);
  return { ca, cert, key };
}

/**
 * The TLS of a client of the service at `baseUrl`, checked: its material for an https:// URL (the
 * CAs given and the client certificate and key, read and parsed), undefined for an http:// one.
 * Throws, naming the setting: a URL that is not http(s), TLS settings given for an http:// URL
 * (nothing would be verified or presented), material that cannot be used.
 */
export function clientTls(
  baseUrl: string,
  settings: ClientTlsSettings,
  names: ClientTlsNames,
): ClientTlsMaterial | undefined {
  const url = URL.parse(baseUrl);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new Error(
      `${names.baseUrl} ${JSON.stringify(baseUrl)} is not an http:// or https:// URL: give the service's, e.g. https://edge.example.com:8443`,
    );
  }
  if (url.protocol === "https:") return material(settings, names);
  const given = SETTINGS.filter((k) => settings[k] !== undefined);
  if (given.length > 0) {
    throw new Error(
      `${given.map((k) => names[k]).join(" and ")} ${given.length === 1 ? "is" : "are"} set, but ${names.baseUrl} ${baseUrl} is plain HTTP: nothing would be verified or presented. Use https:// (edge-service serve --tls-cert FILE --tls-key FILE), or unset ${given.length === 1 ? "it" : "them"}`,
    );
  }
  return undefined;
}

export type { RetryNotice, SendOptions, Transport } from "./types";
export { DEFAULT_DEADLINE_MS, httpTransport, type HttpTransportOptions } from "./http";
export type { ClientTlsNames, ClientTlsSettings } from "./tls";

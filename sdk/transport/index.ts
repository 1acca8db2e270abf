export type { RetryNotice, SendOptions, Transport } from "./types";
export { httpTransport, type HttpTransportOptions } from "./http";
export type { ClientTlsNames, ClientTlsSettings } from "./tls";

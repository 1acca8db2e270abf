export type { RetryNotice, SendOptions, Transport } from "./types";
export { embeddedTransport, type EmbeddedTransportOptions, closeEmbeddedStores } from "./embedded";
export { httpTransport, type HttpTransportOptions } from "./http";
export type { ClientTlsNames, ClientTlsSettings } from "./tls";

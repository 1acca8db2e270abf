/**
 * The thin transport between the typed client and the service: one interface, two
 * implementations with the same behaviour. The client never knows which one it has.
 */
export interface Transport {
  /** Origin that request URLs are built on. */
  readonly baseUrl: string;
  send(request: Request): Promise<Response>;
}

// A client that left before its answer: no failure of the server's (logged at info, counted as
// 499), whatever part of the server noticed it.
export class ClientClosedError extends Error {
  constructor() {
    super('The client closed the connection.');
    this.name = 'ClientClosedError';
  }
}

/** The client stopped reading a stream for longer than PROXY_STREAM_STALL_MS: treated as gone. */
export class ClientStalledError extends ClientClosedError {
  constructor() {
    super();
    this.message = 'The client stopped reading the stream.';
    this.name = 'ClientStalledError';
  }
}

/**
 * One HTTP exchange with the device over node:http. Not fetch: the device wants `Connection: close`,
 * which fetch may not set, and an exact request target for the digest `uri`.
 */
import http from 'node:http';
import { BadResponseError, ClientClosedError, TimeoutError, UnreachableError } from '../errors';

export interface HttpExchange {
  host: string;
  port: number;
  method: 'GET' | 'POST';
  /** Path plus encoded query, exactly as it goes on the request line. */
  target: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Name of the operation, for error messages. */
  operation: string;
  signal?: AbortSignal;
  /**
   * Called when the connection is up, with the time it took to open (from the connect call, after any name lookup, to
   * the handshake's end: one network round trip); the request goes out when the promise it returns resolves (its
   * slot), and not at all when it rejects.
   */
  onConnected?: (connectMs: number) => Promise<void>;
  /**
   * Called once the request's bytes are handed to the system ('finish'): a pause of the process (a garbage
   * collection) between the slot and the write would otherwise bring the next request early.
   */
  onSent?: () => void;
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Device answers are a few kilobytes; anything far larger is not the device. */
const MAX_BODY_BYTES = 1024 * 1024;

export function exchange(request: HttpExchange): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    if (request.signal?.aborted) {
      reject(new ClientClosedError());
      return;
    }
    let settled = false;
    const finish = (error: Error | undefined, answer?: HttpAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      if (error) {
        req.destroy();
        reject(error);
      } else resolve(answer!);
    };
    const onAbort = () => finish(new ClientClosedError(true));
    let connecting = performance.now();
    const req = http.request(
      {
        host: request.host,
        port: request.port,
        method: request.method,
        path: request.target,
        agent: false,
        headers: {
          ...request.headers,
          'Content-Type': 'application/json',
          Connection: 'close',
          ...(request.method === 'POST' ? { 'Content-Length': '0' } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            // The device is there but this is no answer of its kind.
            finish(new BadResponseError(request.operation, `an answer of more than ${MAX_BODY_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          finish(undefined, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', (error: NodeJS.ErrnoException) => finish(new UnreachableError(`${request.host}:${request.port}`, error)));
        res.on('close', () => {
          if (!res.complete)
            finish(new UnreachableError(`${request.host}:${request.port}`, Object.assign(new Error('reset'), { code: 'ECONNRESET' })));
        });
      },
    );
    // The time-out counts the connect and the exchange, not the hold for the slot in between.
    const timeOut = (ms: number) => setTimeout(() => finish(new TimeoutError(request.operation, request.timeoutMs)), ms);
    const begun = performance.now();
    let timer = timeOut(request.timeoutMs);
    request.signal?.addEventListener('abort', onAbort);
    req.on('error', (error: NodeJS.ErrnoException) => finish(new UnreachableError(`${request.host}:${request.port}`, error)));
    req.on('socket', (socket) => {
      // A host name's lookup, and an attempt at another of its addresses that failed, are no part of the round trip.
      const restart = () => (connecting = performance.now());
      socket.once('lookup', restart);
      socket.on('connectionAttempt', restart);
      socket.once('connect', () => {
        const spent = performance.now() - begun;
        clearTimeout(timer);
        const held = request.onConnected?.(performance.now() - connecting) ?? Promise.resolve();
        held.then(
          () => {
            if (settled) return;
            timer = timeOut(Math.max(0, request.timeoutMs - spent));
            req.once('finish', () => request.onSent?.());
            req.end();
          },
          (error: Error) => finish(error),
        );
      });
    });
  });
}

/// <reference types="node" />
// A local HTTP server on a free loopback port that the test answers request
// by request, the way timebox would (status, headers, JSON body). The web part
// reaches it through the real client, SPFx's real AadHttpClient and Node's
// fetch, so what arrives here is what a Function App would receive.
import * as http from 'http';
import type { AddressInfo } from 'net';

export interface Exchange {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Answers with a JSON body. */
  reply(status: number, body: unknown, headers?: Record<string, string>): void;
  /** Starts a 200 text/event-stream answer, as timebox streams one. */
  stream(): EventStream;
  /** Settles when the client goes away before an answer (an abort closes the connection). */
  abandoned: Promise<void>;
}

/** A Server-Sent Events answer the test writes event by event. */
export interface EventStream {
  event(name: string, data: unknown): void;
  end(): void;
}

export class TimeboxServer {
  private readonly pending: Exchange[] = [];
  private readonly waiters: ((e: Exchange) => void)[] = [];

  private constructor(private readonly server: http.Server, public readonly url: string) {}

  public static start(): Promise<TimeboxServer> {
    return new Promise((resolve) => {
      let self: TimeboxServer | undefined;
      const server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => self?.arrive(req, res, Buffer.concat(chunks).toString('utf8')));
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        self = new TimeboxServer(server, `http://127.0.0.1:${port}`);
        resolve(self);
      });
    });
  }

  /** The next request, as soon as it has arrived in full. */
  public next(): Promise<Exchange> {
    const e = this.pending.shift();
    if (e) return Promise.resolve(e);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  public close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private arrive(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    let answered = false; // the answer is complete: a close after it is not an abandon
    const e: Exchange = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
      reply(status, json, headers = {}) {
        answered = true;
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(json));
      },
      stream() {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'req-stream' });
        res.flushHeaders();
        return {
          event: (name, data) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
          end: () => {
            answered = true;
            res.end();
          },
        };
      },
      abandoned: new Promise((resolve) => res.on('close', () => (answered ? undefined : resolve()))),
    };
    const waiter = this.waiters.shift();
    if (waiter) waiter(e);
    else this.pending.push(e);
  }
}

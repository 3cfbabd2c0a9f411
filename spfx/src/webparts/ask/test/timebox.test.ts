import { askFor, connectionKey, type SpfxServices } from '../timebox';
import { aadHttpClientFactory, aadTokenProviderFactory, configurationV1 } from './aadHttpClient';
import { TimeboxServer } from './server';

const APP = 'api://contoso-timebox';

let server: TimeboxServer;
beforeEach(async () => {
  server = await TimeboxServer.start();
});
afterEach(() => server.close());

/** SharePoint's services as the web part gets them, each recording the resources it gave tokens for. */
function services(): SpfxServices & { viaClient: string[]; viaProvider: string[] } {
  const viaClient: string[] = [];
  const viaProvider: string[] = [];
  return {
    viaClient,
    viaProvider,
    aadHttpClientFactory: aadHttpClientFactory(viaClient),
    aadTokenProviderFactory: aadTokenProviderFactory(viaProvider),
    aadHttpClientConfiguration: configurationV1,
  };
}

const noop = (): void => undefined;

/**
 * Asks once through `ask`, answering the request at the server; returns what the server received. A call that
 * fails before its request arrives fails here at once, not at the test's timeout.
 */
async function askOnce(ask: NonNullable<ReturnType<typeof askFor>>): Promise<{ url: string; accept: string | undefined }> {
  const call = ask('hi', { signal: new AbortController().signal, onAttempt: noop, onDelta: noop, onHop: noop });
  const ex = await Promise.race([server.next(), call.then(() => new Promise<never>(noop))]);
  ex.reply(200, { answer: 'ok', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, requestId: 'r', elapsedMs: 1, upstreamAttempts: 1, truncated: false });
  await call;
  return { url: ex.url, accept: ex.headers.accept };
}

describe('the web part properties', () => {
  it('stream by default: fetch with a token from AadTokenProvider, asking for an event stream', async () => {
    const s = services();
    const ask = askFor({ functionAppUrl: ` ${server.url}/ `, appIdUri: ` ${APP} ` }, s);
    expect(ask).toBeDefined();
    expect(await askOnce(ask!)).toEqual({ url: '/api/chat', accept: 'text/event-stream' });
    expect(s.viaProvider).toEqual([APP]);
    expect(s.viaClient).toEqual([]);
  });

  it('with streaming off: AadHttpClient, asking for JSON', async () => {
    const s = services();
    const ask = askFor({ functionAppUrl: server.url, appIdUri: APP, stream: false }, s);
    expect(await askOnce(ask!)).toEqual({ url: '/api/chat', accept: 'application/json' });
    expect(s.viaClient).toEqual([APP]);
    expect(s.viaProvider).toEqual([]);
  });

  it('no Ask until both the URL and the application ID URI pass the checks', () => {
    expect(askFor({}, services())).toBeUndefined();
    expect(askFor({ functionAppUrl: server.url }, services())).toBeUndefined();
    expect(askFor({ appIdUri: APP }, services())).toBeUndefined();
    expect(askFor({ functionAppUrl: `${server.url}/api`, appIdUri: APP }, services())).toBeUndefined();
  });

  it('one connection per URL, app and path', () => {
    const base = { functionAppUrl: 'https://a.azurewebsites.net', appIdUri: APP };
    expect(connectionKey(base)).toBe(connectionKey({ ...base, stream: true, functionAppUrl: ' https://a.azurewebsites.net ' }));
    expect(connectionKey(base)).not.toBe(connectionKey({ ...base, stream: false }));
    expect(connectionKey(base)).not.toBe(connectionKey({ ...base, appIdUri: 'api://other' }));
  });
});

describe('signing in', () => {
  it.each([true, false])('a failed sign-in is not kept: the next question signs in again, once (stream: %s)', async (stream) => {
    const s = services();
    let signIns = 0;
    const refuseFirst = <T>(signIn: () => Promise<T>): Promise<T> => (++signIns === 1 ? Promise.reject(new Error('sign-in refused')) : signIn());
    const { getClient } = s.aadHttpClientFactory;
    const { getTokenProvider } = s.aadTokenProviderFactory;
    s.aadHttpClientFactory = { getClient: (resource) => refuseFirst(() => getClient(resource)) };
    s.aadTokenProviderFactory = { getTokenProvider: () => refuseFirst(() => getTokenProvider()) };
    const ask = askFor({ functionAppUrl: server.url, appIdUri: APP, stream }, s)!;
    await expect(ask('hi', { signal: new AbortController().signal, onAttempt: noop, onDelta: noop, onHop: noop })).rejects.toThrow('sign-in refused');
    expect((await askOnce(ask)).url).toBe('/api/chat');
    expect((await askOnce(ask)).url).toBe('/api/chat');
    expect(signIns).toBe(2);
  });
});

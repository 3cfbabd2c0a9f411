// The one place the web part meets SPFx's HTTP stack: @timebox/client's
// aadTokenTransport over SPFx's AadTokenProvider (streamed answers), or its
// spfxTransport over AadHttpClient (whole answers). Type-checked against the real
// @microsoft/sp-http declarations, so a change on either side that breaks the
// fit fails the build. Only types are imported here: the web part hands in
// AadHttpClient.configurations.v1, so the tests can run this module outside
// SharePoint (SPFx's runtime packages need SharePoint's own modules).
import type { AadHttpClient, AadHttpClientConfiguration, AadHttpClientFactory, AadTokenProvider, AadTokenProviderFactory } from '@microsoft/sp-http';
import { checkAppIdUri, checkFunctionAppUrl } from './settings';
import { TimeboxClient, aadTokenTransport, spfxTransport, type AttemptEvent, type ChatResponse, type DeltaHandler, type Usage } from '@timebox/client';

/** What the component hears while a call runs: every attempt, every piece of a streamed answer, every hop of a long one. */
export interface AskOptions {
  signal: AbortSignal;
  onAttempt: (e: AttemptEvent) => void;
  onDelta: DeltaHandler;
  /** A long answer goes on in its next hop (2, 3, ...), with the cursor that cancels it. */
  onHop: (hop: number, cursor: string) => void;
}

/**
 * What the component needs to ask a question: the call, cancellable, reporting every attempt (and every piece,
 * when it streams, and every hop of a long answer); and, through the same client, the caller's token quota
 * (GET /api/usage) and the cancel of a long answer by its cursor (POST /api/chat/cancel), which
 * `keepalive` lets outlive the page.
 */
export type Ask = ((question: string, options: AskOptions) => Promise<ChatResponse>) & {
  usage?: (signal: AbortSignal) => Promise<Usage>;
  cancel?: (cursor: string, options?: { keepalive?: boolean }) => Promise<void>;
};

/**
 * Adds the usage reader and the cancel to ask, over the same lazily made client. The usage is information beside
 * the answer: read within 4 s or not at all, so a quota store that is down (its 503 asks for a 5 s wait) is not
 * waited for.
 */
function withClient(ask: Ask, client: () => Promise<TimeboxClient>): Ask {
  ask.usage = async (signal) => (await client()).usage({ signal, attemptTimeoutMs: 4_000, deadlineMs: 4_000 });
  ask.cancel = async (cursor, options) => (await client()).cancel(cursor, options);
  return ask;
}

/**
 * The client, made by make on first use and kept for every later call; a make that fails (a refused sign-in) is
 * not kept: the next question tries again.
 */
function lazyClient(make: () => Promise<TimeboxClient>): () => Promise<TimeboxClient> {
  let client: Promise<TimeboxClient> | undefined;
  return () => {
    if (!client) {
      const pending = make();
      pending.catch(() => {
        if (client === pending) client = undefined;
      });
      client = pending;
    }
    return client;
  };
}

/** A timebox client that sends every request with fetch and a token from SPFx's AadTokenProvider, so answers can stream. */
export function timeboxOverAadToken(provider: AadTokenProvider, appIdUri: string, functionAppUrl: string): TimeboxClient {
  return new TimeboxClient({ baseUrl: functionAppUrl, transport: aadTokenTransport(provider, appIdUri) });
}

/**
 * The web part's streaming Ask: AadHttpClient reads a response whole, so the
 * answer streams through fetch with a token from SharePoint's
 * AadTokenProvider (the same token AadHttpClient would send, after the same
 * approval). The text appears as it is written; the rule is the client's
 * (a fast failure before the first piece is retried, nothing after it).
 */
export function streamOverAadToken(
  factory: Pick<AadTokenProviderFactory, 'getTokenProvider'>,
  functionAppUrl: string,
  appIdUri: string,
): Ask {
  const get = lazyClient(() => factory.getTokenProvider().then((provider) => timeboxOverAadToken(provider, appIdUri, functionAppUrl)));
  return withClient(async (question, { signal, onAttempt, onDelta, onHop }) => {
    const timebox = await get();
    return timebox.chatStream({ messages: [{ role: 'user', content: question }] }, { signal, onAttempt, onDelta, onHop });
  }, get);
}

/** A timebox client that sends every request through AadHttpClient (which adds Authorization: Bearer). */
export function timeboxOverAad(aad: AadHttpClient, configuration: AadHttpClientConfiguration, functionAppUrl: string): TimeboxClient {
  return new TimeboxClient({ baseUrl: functionAppUrl, transport: spfxTransport(aad, configuration) });
}

/**
 * The web part's Ask: gets the AadHttpClient for the Function App's app
 * registration (SharePoint acquires the token once the admin approved the
 * permission) and sends the question as one user message.
 */
export function askOverAad(
  factory: Pick<AadHttpClientFactory, 'getClient'>,
  configuration: AadHttpClientConfiguration,
  functionAppUrl: string,
  appIdUri: string,
): Ask {
  const get = lazyClient(() => factory.getClient(appIdUri).then((aad) => timeboxOverAad(aad, configuration, functionAppUrl)));
  return withClient(async (question, { signal, onAttempt, onHop }) => {
    const timebox = await get();
    return timebox.chat({ messages: [{ role: 'user', content: question }] }, { signal, onAttempt, onHop });
  }, get);
}

/** The web part's properties that decide how it calls. */
export interface ConnectionProperties {
  functionAppUrl?: string;
  appIdUri?: string;
  /** Default true: stream through AadTokenProvider; false: whole answers through AadHttpClient. */
  stream?: boolean;
}

/** What SharePoint gives the web part to reach an Entra ID-protected API (its context, and AadHttpClient.configurations.v1). */
export interface SpfxServices {
  aadHttpClientFactory: Pick<AadHttpClientFactory, 'getClient'>;
  aadTokenProviderFactory: Pick<AadTokenProviderFactory, 'getTokenProvider'>;
  aadHttpClientConfiguration: AadHttpClientConfiguration;
}

/**
 * The Ask for the web part's properties, or undefined until the URL and the
 * application ID URI both pass the property pane's checks (the web part then
 * says what to set instead of showing the question box).
 */
export function askFor(p: ConnectionProperties, services: SpfxServices): Ask | undefined {
  const url = (p.functionAppUrl ?? '').trim();
  const app = (p.appIdUri ?? '').trim();
  if (checkFunctionAppUrl(url) !== '' || checkAppIdUri(app) !== '') return undefined;
  // The client drops a trailing slash itself.
  return p.stream === false
    ? askOverAad(services.aadHttpClientFactory, services.aadHttpClientConfiguration, url, app)
    : streamOverAadToken(services.aadTokenProviderFactory, url, app);
}

/** Properties that call the same way share one Ask (and its client); a change makes a new one. */
export function connectionKey(p: ConnectionProperties): string {
  return JSON.stringify([(p.functionAppUrl ?? '').trim(), (p.appIdUri ?? '').trim(), p.stream !== false]);
}

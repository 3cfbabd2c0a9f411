// The one place the web part meets SPFx's HTTP stack: @timebox/client's
// spfxTransport over AadHttpClient. Type-checked against the real
// @microsoft/sp-http declarations, so a change in either side that breaks the
// fit fails the build.
import { AadHttpClient, type AadHttpClientFactory } from '@microsoft/sp-http';
import { TimeboxClient, spfxTransport, type AttemptEvent, type ChatResponse } from '@timebox/client';

/** What the component needs to ask a question: the call, cancellable, reporting every attempt. */
export type Ask = (question: string, options: { signal: AbortSignal; onAttempt: (e: AttemptEvent) => void }) => Promise<ChatResponse>;

/** A timebox client that sends every request through AadHttpClient (Authorization: Bearer for appIdUri). */
export function timeboxOverAad(aad: AadHttpClient, functionAppUrl: string): TimeboxClient {
  return new TimeboxClient({ baseUrl: functionAppUrl, transport: spfxTransport(aad, AadHttpClient.configurations.v1) });
}

/**
 * The web part's Ask: gets the AadHttpClient for the Function App's app
 * registration (SharePoint acquires the token; the admin approved the
 * permission) and sends the question as one user message.
 */
export function askOverAad(factory: Pick<AadHttpClientFactory, 'getClient'>, functionAppUrl: string, appIdUri: string): Ask {
  let client: Promise<TimeboxClient> | undefined;
  return async (question, { signal, onAttempt }) => {
    if (!client) {
      client = factory.getClient(appIdUri).then((aad) => timeboxOverAad(aad, functionAppUrl));
      // A failed sign-in is not cached: the next question tries again.
      client.catch(() => (client = undefined));
    }
    const timebox = await client;
    return timebox.chat({ messages: [{ role: 'user', content: question }] }, { signal, onAttempt });
  };
}

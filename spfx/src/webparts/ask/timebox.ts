// The one place the web part meets SPFx's HTTP stack: @timebox/client's
// spfxTransport over AadHttpClient. Type-checked against the real
// @microsoft/sp-http declarations, so a change on either side that breaks the
// fit fails the build. Only types are imported here: the web part hands in
// AadHttpClient.configurations.v1, so the tests can run this module outside
// SharePoint (SPFx's runtime packages need SharePoint's own modules).
import type { AadHttpClient, AadHttpClientConfiguration, AadHttpClientFactory } from '@microsoft/sp-http';
import { TimeboxClient, spfxTransport, type AttemptEvent, type ChatResponse } from '@timebox/client';

/** What the component needs to ask a question: the call, cancellable, reporting every attempt. */
export type Ask = (question: string, options: { signal: AbortSignal; onAttempt: (e: AttemptEvent) => void }) => Promise<ChatResponse>;

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
  let client: Promise<TimeboxClient> | undefined;
  return async (question, { signal, onAttempt }) => {
    if (!client) {
      const pending = factory.getClient(appIdUri).then((aad) => timeboxOverAad(aad, configuration, functionAppUrl));
      // A failed sign-in is not kept: the next question tries again.
      pending.catch(() => {
        if (client === pending) client = undefined;
      });
      client = pending;
    }
    const timebox = await client;
    return timebox.chat({ messages: [{ role: 'user', content: question }] }, { signal, onAttempt });
  };
}

/**
 * The streaming transport for SPFx web parts. SPFx's `AadHttpClient` reads
 * a response whole before handing it over, so it cannot show an answer as it
 * is written; this transport asks SPFx's `AadTokenProvider` for the token
 * and sends the request with the browser's own `fetch`, whose body streams.
 */
import { fetchTransport, type FetchLike, type Transport } from './client.js';

/**
 * The structural shape of SPFx's `AadTokenProvider` (`@microsoft/sp-http`,
 * from `this.context.aadTokenProviderFactory.getTokenProvider()`): it
 * resolves with an access token for `resource` (the API's application ID
 * URI), from its cache while the token is fresh. Nothing is imported from
 * SPFx at run time.
 */
export interface AadTokenProviderLike {
  getToken(resource: string, useCachedToken?: boolean): Promise<string>;
}

/**
 * Sends each request with `fetch` and `Authorization: Bearer <token>`, the
 * token asked of `provider` for `resource` before every attempt (the
 * provider caches it and renews it before it expires). It carries the same
 * header `AadHttpClient` would, so the same Function App (Easy Auth or
 * timebox's own token check) accepts both.
 *
 * A token that cannot be had (the permission is not approved, the user's
 * session ended) fails the attempt like a network error: tried again only
 * while it fails fast.
 */
export function aadTokenTransport(provider: AadTokenProviderLike, resource: string, fetchImpl?: FetchLike): Transport {
  return bearerTransport(() => provider.getToken(resource), fetchImpl);
}

/**
 * For callers outside SPFx (a page using MSAL.js, a Node service, the demo
 * page against the local issuer): sends each request with `fetch` and
 * `Authorization: Bearer <token>`, asking `getToken` before every attempt,
 * so a provider that caches and renews (MSAL's `acquireTokenSilent`) keeps
 * a long retry sequence on a fresh token. A token that cannot be had fails
 * the attempt like a network error, as in {@link aadTokenTransport}.
 */
export function bearerTransport(getToken: () => string | Promise<string>, fetchImpl?: FetchLike): Transport {
  const send = fetchTransport(fetchImpl);
  return async (url, request) => {
    const token = await getToken();
    return send(url, { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } });
  };
}

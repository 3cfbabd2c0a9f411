// SPFx's AadHttpClient as it behaves on the wire, for the tests.
//
// The real class cannot run outside SharePoint: @microsoft/sp-core-library
// and @microsoft/sp-http-base require Microsoft-internal modules
// (@msinternal/*) that are not published, which SharePoint provides at run
// time. This stand-in does what sp-http-base 1.23.2's AadHttpClient._fetch
// does: get a token for the resource, set `Authorization: Bearer <token>` on
// the request's headers, `fetch(new Request(url, options))` (the signal
// included) and resolve with the response whatever its status. Its parameters
// are typed with the real declarations; the production code is compiled
// against the real class (timebox.ts).
import type {
  AadHttpClient, AadHttpClientConfiguration, AadHttpClientFactory, AadTokenProvider, AadTokenProviderFactory, IHttpClientOptions,
} from '@microsoft/sp-http';

export class AadHttpClientStandIn {
  public constructor(
    private readonly resource: string,
    private readonly getToken: (resource: string) => Promise<string>,
  ) {}

  public fetch(url: string, configuration: AadHttpClientConfiguration, options: IHttpClientOptions): Promise<Response> {
    return this.getToken(this.resource).then((token) => {
      const headers = new Headers(options.headers);
      headers.set('Authorization', `Bearer ${token}`);
      return fetch(new Request(url, { ...options, headers }));
    });
  }

  public get(url: string, configuration: AadHttpClientConfiguration, options: IHttpClientOptions = {}): Promise<Response> {
    return this.fetch(url, configuration, { ...options, method: 'GET' });
  }

  public post(url: string, configuration: AadHttpClientConfiguration, options: IHttpClientOptions): Promise<Response> {
    return this.fetch(url, configuration, { ...options, method: 'POST' });
  }
}

/** An AadHttpClientFactory whose clients are stand-ins; records every resource a token was asked for. */
export function aadHttpClientFactory(tokensFor: string[]): Pick<AadHttpClientFactory, 'getClient'> {
  const getToken = (resource: string): Promise<string> => {
    tokensFor.push(resource);
    return Promise.resolve(`token-for-${resource}`);
  };
  return {
    getClient: (resource: string) => Promise.resolve(new AadHttpClientStandIn(resource, getToken) as unknown as AadHttpClient),
  };
}

/** What the web part passes as AadHttpClient.configurations.v1 (an opaque flag object to the client). */
export const configurationV1 = {} as AadHttpClientConfiguration;

/** An AadTokenProviderFactory whose provider records every resource a token was asked for. */
export function aadTokenProviderFactory(tokensFor: string[]): Pick<AadTokenProviderFactory, 'getTokenProvider'> {
  const provider = {
    getToken(resource: string): Promise<string> {
      tokensFor.push(resource);
      return Promise.resolve(`token-for-${resource}`);
    },
  };
  return { getTokenProvider: () => Promise.resolve(provider as unknown as AadTokenProvider) };
}

// A compile-time check: SPFx's AadHttpClient, as @microsoft/sp-http-base
// 1.23.2 declares it (dist/index-internal.d.ts: fetch/get/post(url,
// configuration, options: IHttpClientOptions extends RequestInit) resolving
// with HttpClientResponse implements Response), fits spfxTransport without
// a cast. The declarations are copied so the package need not be installed;
// the same check passed against the real package.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { TimeboxClient, aadTokenTransport, spfxTransport } from '../src/index.js';

declare class AadHttpClientConfiguration {
  private readonly _flags: unknown;
}
// eslint-disable-next-line @typescript-eslint/no-empty-interface
interface IHttpClientOptions extends RequestInit {}
declare class AadHttpClient {
  static readonly configurations: { readonly v1: AadHttpClientConfiguration };
  fetch(url: string, configuration: AadHttpClientConfiguration, options: IHttpClientOptions): Promise<Response>;
  get(url: string, configuration: AadHttpClientConfiguration, options?: IHttpClientOptions): Promise<Response>;
  post(url: string, configuration: AadHttpClientConfiguration, options: IHttpClientOptions): Promise<Response>;
}

function webPartClient(aad: AadHttpClient): TimeboxClient {
  return new TimeboxClient({ baseUrl: 'https://contoso-timebox.azurewebsites.net', transport: spfxTransport(aad, AadHttpClient.configurations.v1) });
}

test("SPFx's AadHttpClient fits spfxTransport (checked by tsc)", () => {
  assert.equal(typeof webPartClient, 'function');
});

// SPFx's AadTokenProvider, as @microsoft/sp-http-base 1.23.2 declares it
// (dist/index-internal-beta.d.ts, IAadTokenProvider: two getToken overloads,
// copied as they are), fits aadTokenTransport without a cast.
interface IGetTokenOptions {
  useCachedToken?: boolean;
  claims?: string;
}
declare class AadTokenProvider {
  getToken(resourceEndpoint: string, options?: IGetTokenOptions): Promise<string>;
  getToken(resourceEndpoint: string, useCachedToken?: boolean): Promise<string>;
}

function streamingWebPartClient(provider: AadTokenProvider): TimeboxClient {
  return new TimeboxClient({ baseUrl: 'https://contoso-timebox.azurewebsites.net', transport: aadTokenTransport(provider, 'api://timebox-api') });
}

test("SPFx's AadTokenProvider fits aadTokenTransport (checked by tsc)", () => {
  assert.equal(typeof streamingWebPartClient, 'function');
});

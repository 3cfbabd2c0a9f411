/**
 * @timebox/client: call a timebox Function App from the browser or an SPFx
 * web part, retrying only fast failures.
 */
export { decide, backoffMs, serverWaitMs, parseHttpDate, DEFAULTS } from './rule.js';
export type { Reason, RetryPolicy, HeaderReader, FailedAttempt, Decision } from './rule.js';
export { TimeboxClient, TimeboxError, createClient, fetchTransport, spfxTransport, systemClock } from './client.js';
export { aadTokenTransport, bearerTransport } from './aad.js';
export { usageLine } from './usage.js';
export type { Usage, UsageWindow } from './usage.js';
export type { AadTokenProviderLike } from './aad.js';
export type { DeltaHandler } from './stream.js';
export type {
  AttemptEvent, ChatStreamEvent, PartialAnswer, StreamCallOptions, CallOptions, ChatMessage, ChatRequest, ChatResponse, Clock, FetchLike, ResponseLike,
  SpfxHttpClientLike, SpfxRequestOptions, TimeboxClientOptions, TimeboxErrorDetails, Transport, TransportRequest,
} from './client.js';

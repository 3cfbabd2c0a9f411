// The tests' environment: jsdom (the component renders into a DOM) with
// Node's own fetch, Request, Response, Headers and AbortController in the
// window. jsdom has no fetch, and SPFx's AadHttpClient calls
// window.fetch(new Request(url, { signal })): with Node's classes (undici)
// its requests really go over HTTP to the test's server, and an abort really
// closes the connection.
const { TestEnvironment } = require('jest-environment-jsdom');

const fromNode = [
  'fetch', 'Request', 'Response', 'Headers', 'FormData', 'Blob',
  'AbortController', 'AbortSignal', 'DOMException',
  'ReadableStream', 'TextEncoder', 'TextDecoder'
];

class JsdomWithNodeFetch extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of fromNode) this.global[name] = globalThis[name];
  }
}

module.exports = JsdomWithNodeFetch;

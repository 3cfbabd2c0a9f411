// Jest cannot resolve 'AskWebPartStrings' as SPFx does (the bundler maps it to
// loc/<locale>.js, an AMD module): config/jest.config.json maps it here, and
// this runs loc/en-us.js with a one-shot define() so tests read the real strings.
(function loadEnUs(): void {
  const host = globalThis as unknown as { define?: (deps: string[], factory: () => IAskWebPartStrings) => void };
  let loaded: IAskWebPartStrings | undefined;
  host.define = (_deps, factory) => {
    loaded = factory();
  };
  try {
    // An import would run before define() exists: the AMD module needs it first.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require('../loc/en-us.js');
  } finally {
    delete host.define;
  }
  module.exports = loaded;
})();

// Jest runs the web part's tests as CommonJS (lib-commonjs), while
// @timebox/client ships ES modules only. This turns the client's own build
// (client/dist/*.js) and its ESM-only dependency into CommonJS for Jest and changes nothing else, so the
// tests run the same code the bundle contains.
const ts = require('typescript');

module.exports = {
  process(sourceText, sourcePath) {
    const out = ts.transpileModule(sourceText, {
      fileName: sourcePath,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2019, sourceMap: false }
    });
    return { code: out.outputText };
  }
};

// The transform's driver, in an isolate of its own (transform.go): called
// with the sucrase unit's factory, it answers run(code, filename, mode).
// Nothing a tenant does reaches this isolate but the text it asks to
// transform, so the transform's intrinsics are always V8's own.
//
// mode 'cjs' (a run's code, a register_function source, a module file
// require loads): import/export become require calls and TypeScript is
// removed, every line kept where it was. JavaScript keeps every import, as
// node loads them (sucrase's TypeScript mode drops the unused ones, as
// TypeScript does for type-only imports); code that is not JavaScript is
// taken as TypeScript. import.meta gets node's shape.
// mode 'esm' (an ES module file that is TypeScript): only TypeScript is
// removed, and with it the imports nothing uses, as TypeScript elides
// type-only ones.
//
// The answer is the code, or "\u0000" and the transformer's message — or
// "\u0000" alone when the code uses no module or TypeScript syntax, so
// V8's own SyntaxError is the one to give.
(function (unit) {
  'use strict';
  const module = { exports: {} };
  unit(null)(module, module.exports, function require(name) {
    throw new Error('code-runner: the transform cannot load ' + name);
  });
  const transform = module.exports;
  const replaceImportMeta = module.exports.replaceImportMeta;
  const moduleSyntax = MODULE_SYNTAX;
  // The import.meta node gives an ES module — a null prototype, dirname,
  // filename, resolve (a relative or absolute path to its file: URL, a
  // node: name as it is, a bare name to node:<name>) and url — made on
  // first use by a function declared after the code (hoisted, so every
  // line stays where it was). The names __crIM and __crIMv are the code's
  // own from then on.
  function importMetaTail(filename) {
    const path = filename === '<code>' ? '/scratch/<code>' : filename;
    return '\n;var __crIMv; function __crIM() { if (__crIMv) return __crIMv; ' +
      'const url = ' + JSON.stringify('file://' + encodeURI(path)) + '; __crIMv = Object.create(null); ' +
      '__crIMv.dirname = "/scratch"; __crIMv.filename = ' + JSON.stringify(path) + '; ' +
      '__crIMv.resolve = function resolve(s) { s = String(s); if (/^(\\.{0,2}\\/)/.test(s)) return "file://" + encodeURI(s[0] === "/" ? s : "/scratch/" + s.replace(/^\\.\\//, "")); return s.startsWith("node:") ? s : "node:" + s; }; ' +
      '__crIMv.url = url; return __crIMv; }';
  }
  function options(transforms, filename, keep) {
    return { transforms, filePath: filename, disableESTransforms: true, production: true, keepUnusedImports: keep };
  }
  return function run(code, filename, mode) {
    try {
      if (mode === 'esm') return transform(code, options(['typescript'], filename, false)).code;
      const uses = code.indexOf('import') >= 0 && code.indexOf('meta') >= 0;
      const src = uses ? replaceImportMeta(code, '__crIM') : code;
      let out;
      try {
        out = transform(src, options(['imports'], filename, true)).code;
      } catch (_) {
        out = transform(src, options(['typescript', 'imports'], filename, false)).code;
      }
      return uses ? out + importMetaTail(filename) : out;
    } catch (e) {
      if (!moduleSyntax.test(code)) return '\u0000';
      const msg = e !== null && typeof e === 'object' && typeof e.message === 'string' ? e.message : String(e);
      return '\u0000' + msg.replace(/^Error transforming [^:]*: /, '');
    }
  };
})

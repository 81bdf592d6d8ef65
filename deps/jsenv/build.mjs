// Bundles the JavaScript environment (contract §25) into units the isolate
// host compiles lazily, on first touch:
//
//   node build.mjs OUT_DIR
//
// Every unit is one file, OUT_DIR/<name>.js, holding one function expression
//   (function (__cr) { return function (module, exports, require) { … }; })
// made by esbuild from an entry in src/ (our glue) or from a built-in
// package's own entry point. Node's built-in module names stay external in
// every bundle, so `require("buffer")` inside the assert package reaches the
// same Buffer the tenant gets. OUT_DIR/units.txt lists the unit names, one
// per line, and OUT_DIR/packages.txt the built-in packages with their
// versions (the README, the guidance and MODULE_NOT_FOUND name them).
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.resolve(process.argv[2] || path.join(here, 'out'));

// Node's built-in modules we provide (src/node/<name>.js) and every other
// name node has, which `require` refuses with ERR_CODE_RUNNER_UNAVAILABLE.
const provided = ['assert', 'assert/strict', 'buffer', 'events', 'util', 'util/types', 'path', 'path/posix',
  'url', 'querystring', 'string_decoder', 'punycode', 'crypto', 'zlib', 'timers', 'timers/promises',
  'stream', 'stream/promises', 'os', 'perf_hooks', 'fs', 'fs/promises', 'process', 'readline', 'readline/promises'];

// The built-in npm packages (contract §25.4) and the subpaths bundled as
// units of their own. A subpath of lodash or date-fns that names one of
// the main export's functions (lodash/map, date-fns/addDays) resolves to
// that function at run time and needs no unit.
const packages = ['lodash', 'date-fns', 'dayjs', 'zod', 'yaml', 'papaparse', 'marked', 'decimal.js', 'uuid',
  'ajv', 'mathjs', 'fast-xml-parser', 'diff', 'semver'];
const subpaths = ['lodash/fp', 'date-fns/locale', 'date-fns/fp', 'semver/functions/satisfies'];
for (const dir of ['plugin', 'locale']) {
  for (const f of fs.readdirSync(path.join(here, 'node_modules/dayjs', dir))) {
    if (f.endsWith('.js')) subpaths.push('dayjs/' + dir + '/' + f.slice(0, -3));
  }
}

// Our own entries: src/node/*.js are the built-ins, src/internal/*.js the
// pieces behind lazy globals (URL, TextEncoder, structuredClone, …).
const entries = [];
for (const name of provided) entries.push({ unit: 'node/' + name, file: path.join(here, 'src/node', name.replace('/', '_') + '.js') });
for (const f of fs.readdirSync(path.join(here, 'src/internal'))) {
  entries.push({ unit: 'internal/' + f.slice(0, -3), file: path.join(here, 'src/internal', f) });
}
for (const name of [...packages, ...subpaths]) {
  entries.push({ unit: 'pkg/' + name, contents: 'module.exports = require(' + JSON.stringify(name) + ');' });
}

const builtinRe = /^(node:)?(assert|buffer|events|util|path|url|querystring|string_decoder|punycode|crypto|zlib|timers|stream|os|perf_hooks|fs|process|readline)(\/.*)?$/;

// builtins keeps node's module names external, except inside the entry
// that implements that name (src/node/util.js bundles the npm `util`).
function builtins(own) {
  return {
    name: 'builtins',
    setup(build) {
      // whatwg-url reaches tr46 through src/shim/tr46.js, which loads it
      // (the internal/tr46 unit) only for a host that needs it.
      if (own === '') {
        build.onResolve({ filter: /^tr46$/ }, (args) =>
          args.importer.includes(path.join('node_modules', 'whatwg-url')) ? { path: path.join(here, 'src/shim/tr46.js') } : undefined);
        // whatwg-url imports @exodus/bytes/encoding.js only for its side
        // effect: registering the legacy multi-byte encoders (150 KB of
        // tables) that a document in such an encoding needs. The URL and
        // URLSearchParams classes always encode UTF-8, so the URL unit goes
        // without them (282 KB → 94 KB, about half its load time).
        build.onResolve({ filter: /^@exodus\/bytes\/encoding\.js$/ }, (args) =>
          args.importer.includes(path.join('node_modules', 'whatwg-url')) ? { path: path.join(here, 'src/shim/empty.js') } : undefined);
      }
      // sucrase's index imports three modules our fixed use of it never
      // calls: option validation (ts-interface-checker, whose checkers are
      // built when the unit loads), source maps and token dumps. The
      // prelude passes the same constant options every time and asks for
      // no map, so the transform unit goes without them (a third less
      // work when it first loads).
      build.onResolve({ filter: /^\.\/(Options|computeSourceMap|util\/formatTokens)$/ }, (args) =>
        args.importer === path.join(here, 'node_modules/sucrase/dist/index.js') ? { path: path.join(here, 'src/shim/sucrase-unused.js') } : undefined);
      // readable-stream's browser build replaces Readable.from with a
      // function that throws ("not available in the browser"); its node
      // implementation is plain JavaScript over async iterators, so the
      // stream unit takes that one.
      build.onResolve({ filter: /^\.\/internal\/streams\/from$/ }, (args) =>
        args.importer.includes(path.join('node_modules', 'readable-stream')) ? { path: path.join(path.dirname(args.importer), 'internal/streams/from.js') } : undefined);
      // webidl-conversions (whatwg-url's) reads SharedArrayBuffer's
      // getters when it loads; an isolate that makes a startup snapshot
      // has no SharedArrayBuffer yet (V8 adds it to every context made
      // from the snapshot), so the getters are looked up on first use.
      const sabFiles = { 'webidl-conversions/lib/index.js': 2, 'whatwg-url/lib/utils.js': 1 };
      build.onLoad({ filter: /(webidl-conversions[\/\\]lib[\/\\]index|whatwg-url[\/\\]lib[\/\\]utils)\.js$/ }, (args) => {
        const text = fs.readFileSync(args.path, 'utf8');
        const eager = /Object\.getOwnPropertyDescriptor\(\s*SharedArrayBuffer\.prototype,\s*"(byteLength|growable)"\)\.get/g;
        const file = Object.keys(sabFiles).find((f) => args.path.endsWith(f));
        if ((text.match(eager) || []).length !== sabFiles[file]) throw new Error(file + ' changed: its SharedArrayBuffer getters are not where build.mjs expects them');
        return {
          contents: text.replace(eager, (_, k) => `function () { return Object.getOwnPropertyDescriptor(SharedArrayBuffer.prototype, "${k}").get.call(this); }`),
          loader: 'js',
        };
      });
      // node-inspect-extracted stands in for V8's internals with what a
      // library can see (every promise <pending>, proxies' traps run, no
      // map iterator's entries, types by constructor name). The binding
      // answers them as node's own internals do (__cr.intrinsics): the
      // stand-ins are swapped for calls of those, exactly where the pinned
      // version has them.
      build.onLoad({ filter: /node-inspect-extracted[\/\\]dist[\/\\]inspect\.js$/ }, (args) => {
        let text = fs.readFileSync(args.path, 'utf8');
        const swap = (from, to) => {
          if (text.split(from).length !== 2) throw new Error('node-inspect-extracted changed: build.mjs expects exactly one ' + from);
          text = text.replace(from, () => to);
        };
        swap('getPromiseDetails:()=>[g,void 0]',
          'getPromiseDetails:(p)=>{const d=__cr.intrinsics.promiseState(p);return d===void 0||d[0]===0?[g,void 0]:d[0]===2?[h,d[1]]:[1,d[1]]}');
        swap('getProxyDetails:y.getProxyDetails', 'getProxyDetails:(p,f=!0)=>__cr.intrinsics.proxyDetails(p,f)');
        swap('previewEntries:t=>[[],!1]', 'previewEntries:(t,i)=>__cr.intrinsics.previewEntries(t,i)');
        swap('getConstructorName(t){if(!t||"object"!=typeof t)throw new i("Invalid object");',
          'getConstructorName(t){if(!t||"object"!=typeof t&&"function"!=typeof t)throw new i("Invalid object");return __cr.intrinsics.constructorName(t);');
        swap('getOwnNonIndexProperties:function(t,e=2){',
          'getOwnNonIndexProperties:(t,e=2)=>__cr.intrinsics.ownNonIndexProperties(t,e),_libraryOwnNonIndexProperties:function(t,e=2){');
        // node-inspect-extracted follows a newer node than 20, whose output
        // is the one to match: symbol keys in brackets, a proxy shown as its
        // target (no Proxy(…) around it), an ArrayBuffer's and a DataView's
        // byteLength as plain properties.
        swap('s=t.stylize(e,"symbol")}', 's=`[${t.stylize(e,"symbol")}]`}');
        swap('return!1===i.enumerable&&(s=', 'return!1===i.enumerable&&"symbol"!=typeof r&&(s=');
        swap('c=je(e=c,!1),s+=1}while', 'c=je(e=c,!1)}while');
        swap('return n+`{ [byteLength]: ${', 'return n+`{ byteLength: ${');
        swap('f[0]=`${n}{`,E=["byteLength"]}', 'f[0]=`${n}{`,l.unshift("byteLength")}');
        // node 20's formatProperty: a key that is no own property (those
        // byteLengths) is shown as an enumerable value.
        swap('if(void 0!==(i=i||pt(e,r)).value){', 'if(void 0!==(i=i||pt(e,r)||{value:e[r],enumerable:!0}).value){');
        swap('f[0]=`${Xn(c,u,"DataView")}{`,E=["byteLength","byteOffset","buffer"]', 'f[0]=`${Xn(c,u,"DataView")}{`,l.unshift("byteLength","byteOffset","buffer")');
        const typesStart = text.indexOf('t.exports={isAsyncFunction:');
        const typesEnd = text.indexOf('isSymbolObject:R}', typesStart);
        if (typesStart < 0 || typesEnd < 0) throw new Error('node-inspect-extracted changed: its util.types module is not where build.mjs expects it');
        // V8's own type checks (binding.cc's TypeFlag bits).
        const bit = (n) => `(t)=>(__cr.intrinsics.typeFlags(t)&${n})!==0`;
        const types = {
          isAsyncFunction: 1 << 7, isGeneratorFunction: 1 << 8, isAnyArrayBuffer: (1 << 18) | (1 << 19), isArrayBuffer: 1 << 18,
          isArgumentsObject: 1 << 9, isBoxedPrimitive: 1 << 10, isDataView: 1 << 21, isExternal: 1 << 6, isMap: 1 << 14,
          isMapIterator: 1 << 2, isModuleNamespaceObject: 1 << 5, isNativeError: 1 << 11, isPromise: 1 << 0, isSet: 1 << 15,
          isSetIterator: 1 << 3, isWeakMap: 1 << 12, isWeakSet: 1 << 13, isRegExp: 1 << 17, isDate: 1 << 16, isTypedArray: 1 << 20,
          isStringObject: 1 << 22, isNumberObject: 1 << 23, isBooleanObject: 1 << 24, isBigIntObject: 1 << 25, isSymbolObject: 1 << 26,
        };
        text = text.slice(0, typesStart) + 't.exports={' + Object.entries(types).map(([k, n]) => k + ':' + bit(n)).join(',') + '}' +
          text.slice(typesEnd + 'isSymbolObject:R}'.length);
        return { contents: text, loader: 'js' };
      });
      build.onResolve({ filter: builtinRe }, (args) => {
        const m = builtinRe.exec(args.path);
        let sub = m[3] || '';
        if (sub === '/') sub = '';
        const name = m[2] + sub;
        if (!m[1] && own === m[2] && sub === '' && args.importer.startsWith(path.join(here, 'src'))) {
          return undefined; // the npm package of the same name
        }
        if (!provided.includes(name) && !m[1]) return undefined; // e.g. util/util.js: a file of the npm package
        return { path: name, external: true };
      });
    },
  };
}

// Everything but the README (committed, so the embed has a file) is made anew.
fs.mkdirSync(out, { recursive: true });
for (const f of fs.readdirSync(out)) if (f !== 'README.md') fs.rmSync(path.join(out, f), { recursive: true, force: true });
const units = [];
for (const e of entries) {
  const own = e.unit.startsWith('node/') ? e.unit.slice(5) : e.unit === 'internal/tr46' ? 'tr46' : '';
  const r = await esbuild.build({
    ...(e.file ? { entryPoints: [e.file] } : { stdin: { contents: e.contents, resolveDir: here, sourcefile: e.unit + '.js' } }),
    bundle: true, write: false, format: 'cjs', platform: 'browser', target: 'es2022',
    mainFields: ['main', 'module'], conditions: ['require', 'default'],
    minifyWhitespace: true, minifySyntax: true, legalComments: 'none', logLevel: 'error',
    define: { 'process.env.NODE_ENV': '"production"' },
    plugins: [builtins(own)],
  });
  const code = r.outputFiles[0].text;
  const file = path.join(out, e.unit + '.js');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // A unit is (function (__cr) { return function (module, exports, require) {…} }):
  // the host facade __cr reaches the module body as a closure, never as an
  // argument a tenant function could read through a sloppy caller's
  // .arguments, and packages never use it. Our own glue (internal/, node/)
  // is strict, so no tenant function it calls can reach it through .caller.
  const strict = e.unit.startsWith('pkg/') ? '' : "'use strict';";
  fs.writeFileSync(file, '(function (__cr) { return function (module, exports, require) {' + strict + code + '\n}; })');
  units.push(e.unit);
}
fs.writeFileSync(path.join(out, 'units.txt'), units.sort().join('\n') + '\n');
// What node's import() gives each built-in package and subpath: the names
// of its namespace (a CommonJS package's are only default and those
// node's cjs-module-lexer finds; an ES module's its exports). The isolate
// host's import() of a package gives exactly these.
const esm = {};
for (const name of [...packages, ...subpaths]) {
  try {
    esm[name] = Object.keys(await import(name)).sort();
  } catch (_) {
    try { esm[name] = Object.keys(await import(name + '.js')).sort(); } catch (_) {}
  }
}
fs.writeFileSync(path.join(out, 'esm.json'), JSON.stringify(esm));
const versions = packages.map((p) => p + ' ' + JSON.parse(fs.readFileSync(path.join(here, 'node_modules', p, 'package.json'), 'utf8')).version);
fs.writeFileSync(path.join(out, 'packages.txt'), versions.join('\n') + '\n');
let total = 0;
for (const u of units) total += fs.statSync(path.join(out, u + '.js')).size;
console.log(`jsenv: ${units.length} units, ${(total / 1048576).toFixed(1)} MiB, in ${out}`);

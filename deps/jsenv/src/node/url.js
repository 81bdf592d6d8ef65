// node:url — the legacy url.parse/format/resolve of the browserify url
// package, with the global WHATWG URL and URLSearchParams.
const legacy = require('url');
function fileURLToPath(u) {
  const url = typeof u === 'string' ? new URL(u) : u;
  if (url.protocol !== 'file:') { const e = new TypeError('The URL must be of scheme file'); e.code = 'ERR_INVALID_URL_SCHEME'; throw e; }
  return decodeURIComponent(url.pathname);
}
function pathToFileURL(p) {
  const path = require('path');
  const u = new URL('file://');
  u.pathname = path.resolve(p);
  return u;
}
module.exports = {
  parse: legacy.parse, format: (u, o) => (u instanceof URL ? u.href : legacy.format(u, o)), resolve: legacy.resolve,
  resolveObject: legacy.resolveObject, Url: legacy.Url, fileURLToPath, pathToFileURL,
  domainToASCII: (d) => { try { return new URL('http://' + d).hostname; } catch (_) { return ''; } },
  domainToUnicode: (d) => require('punycode').toUnicode(d),
};
Object.defineProperty(module.exports, 'URL', { get: () => globalThis.URL, enumerable: true });
Object.defineProperty(module.exports, 'URLSearchParams', { get: () => globalThis.URLSearchParams, enumerable: true });

// node:util — the browserify util package for promisify, types,
// deprecate, inherits and callbackify, with node's own inspect and format
// (node-inspect-extracted: the browserify util predates Map/Set output).
const u = require('util');
const ie = __cr.unit('internal/inspect');
function isDeepStrictEqual(a, b) {
  return require('assert/build/internal/util/comparisons.js').isDeepStrictEqual(a, b);
}
const out = Object.assign({}, u, {
  format: ie.format, formatWithOptions: ie.formatWithOptions, inspect: ie.inspect, isDeepStrictEqual,
  stripVTControlCharacters: ie.stripVTControlCharacters,
});
Object.defineProperty(out, 'TextEncoder', { get: () => globalThis.TextEncoder, enumerable: true });
Object.defineProperty(out, 'TextDecoder', { get: () => globalThis.TextDecoder, enumerable: true });
out.promisify.custom = Symbol.for('nodejs.util.promisify.custom');
out.types = Object.assign({}, u.types);
module.exports = out;

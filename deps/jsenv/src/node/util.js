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
// promisify honours node's registered util.promisify.custom symbol (the
// browserify package checks a private symbol of its own, so
// fn[util.promisify.custom], and setTimeout's, were ignored).
const custom = Symbol.for('nodejs.util.promisify.custom');
function promisify(original) {
  if (typeof original === 'function' && original[custom] !== undefined) {
    const fn = original[custom];
    if (typeof fn !== 'function') {
      const e = new TypeError('The "util.promisify.custom" argument must be of type function. Received ' + (fn === null ? 'null' : 'type ' + typeof fn));
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
    return Object.defineProperty(fn, custom, { value: fn, enumerable: false, writable: false, configurable: true });
  }
  const fn = u.promisify(original);
  return Object.defineProperty(fn, custom, { value: fn, enumerable: false, writable: false, configurable: true });
}
promisify.custom = custom;
out.promisify = promisify;
out.types = Object.assign({}, u.types);
module.exports = out;

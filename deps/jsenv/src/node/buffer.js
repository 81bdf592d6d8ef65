// node:buffer — feross/buffer, the browserify Buffer, with node's
// base64url encoding added.
const b = require('buffer');
const B = b.Buffer;
const toString = B.prototype.toString;
B.prototype.toString = function (encoding, start, end) {
  if (typeof encoding === 'string' && encoding.toLowerCase() === 'base64url') {
    return toString.call(this, 'base64', start, end).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  return toString.apply(this, arguments);
};
const isEncoding = B.isEncoding;
B.isEncoding = (e) => (typeof e === 'string' && e.toLowerCase() === 'base64url') || isEncoding(e);
const from = B.from;
B.from = function (value, encodingOrOffset, length) {
  if (typeof value === 'string' && typeof encodingOrOffset === 'string' && encodingOrOffset.toLowerCase() === 'base64url') {
    return from.call(B, value, 'base64');
  }
  return from.apply(B, arguments);
};
const byteLength = B.byteLength;
B.byteLength = function (s, enc) {
  if (typeof enc === 'string' && enc.toLowerCase() === 'base64url') return byteLength(s, 'base64');
  return byteLength.apply(B, arguments);
};
module.exports = Object.assign({}, b, { constants: { MAX_LENGTH: b.kMaxLength, MAX_STRING_LENGTH: (1 << 29) - 24 } });
Object.defineProperty(module.exports, 'atob', { get: () => globalThis.atob, enumerable: true });
Object.defineProperty(module.exports, 'btoa', { get: () => globalThis.btoa, enumerable: true });
Object.defineProperty(module.exports, 'Blob', { get: () => globalThis.Blob, enumerable: true });

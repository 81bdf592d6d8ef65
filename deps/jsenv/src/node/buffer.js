// node:buffer — feross/buffer, the browserify Buffer, with node's
// base64url encoding added and its string conversions done by the binding
// in C++ (intrinsics encode/decode: utf8, latin1, ascii, base64,
// base64url, hex, utf16le), as node's are: a JavaScript loop per byte cost
// tens of milliseconds per MiB.
const b = require('buffer');
const B = b.Buffer;
const { encode, decode } = __cr.intrinsics;
const codes = {
  __proto__: null, utf8: 0, 'utf-8': 0, latin1: 1, binary: 1, ascii: 2, base64: 3, base64url: 4, hex: 5,
  ucs2: 6, 'ucs-2': 6, utf16le: 6, 'utf-16le': 6,
};
function codeOf(encoding) {
  if (encoding === undefined || encoding === null) return 0;
  if (typeof encoding !== 'string') return undefined;
  const c = codes[encoding];
  return c !== undefined ? c : codes[encoding.toLowerCase()];
}
const toString = B.prototype.toString;
B.prototype.toString = function (encoding, start, end) {
  const c = codeOf(encoding);
  if (c === undefined || !(this instanceof Uint8Array)) return toString.apply(this, arguments);
  // feross's clamping, as node's: a start past the end or an end before
  // the start is the empty string.
  const len = this.length;
  if (start === undefined || start < 0) start = 0;
  if (start > len) return '';
  if (end === undefined || end > len) end = len;
  if (end <= 0) return '';
  end >>>= 0;
  start >>>= 0;
  if (end <= start) return '';
  return decode(this, start, end, c);
};
B.prototype.toLocaleString = B.prototype.toString;
for (const [name, c] of [['utf8Slice', 0], ['latin1Slice', 1], ['asciiSlice', 2], ['base64Slice', 3], ['hexSlice', 5], ['ucs2Slice', 6]]) {
  B.prototype[name] = function (start, end) {
    return decode(this, start === undefined ? 0 : start, end === undefined ? this.length : end, c);
  };
}
const isEncoding = B.isEncoding;
B.isEncoding = (e) => (typeof e === 'string' && e.toLowerCase() === 'base64url') || isEncoding(e);
const from = B.from;
B.from = function (value, encodingOrOffset, length) {
  if (typeof value === 'string') {
    const c = codeOf(encodingOrOffset);
    if (c !== undefined) {
      const u = encode(value, c);
      return from.call(B, u.buffer, u.byteOffset, u.byteLength);
    }
  }
  return from.apply(B, arguments);
};
const byteLength = B.byteLength;
B.byteLength = function (s, enc) {
  if (typeof s === 'string') {
    const c = codeOf(enc);
    if (c === 0 || c === 3 || c === 4 || c === 5) return encode(s, c).byteLength;
  }
  return byteLength.apply(B, arguments);
};
const write = B.prototype.write;
B.prototype.write = function (string, offset, length, encoding) {
  // The forms node takes: (string), (string, encoding), (string, offset,
  // encoding), (string, offset, length, encoding).
  if (typeof string === 'string' && (typeof offset === 'string' || typeof length === 'string' || typeof encoding === 'string' || encoding === undefined)) {
    let enc = encoding;
    let off = offset, len = length;
    if (typeof offset === 'string') { enc = offset; off = 0; len = undefined; } else if (typeof length === 'string') { enc = length; len = undefined; }
    const c = codeOf(enc);
    if (c !== undefined && (off === undefined || (Number.isInteger(off) && off >= 0 && off <= this.length))) {
      off = off === undefined ? 0 : off;
      const room = this.length - off;
      const max = len === undefined ? room : Math.min(room, len >>> 0);
      let bytes = encode(string, c);
      if (bytes.length > max) {
        // As node: whole characters only when a UTF-8 one does not fit.
        let n = max;
        if (c === 0) while (n > 0 && (bytes[n] & 0xc0) === 0x80) n--;
        if (c === 6) n -= n % 2;
        bytes = bytes.subarray(0, n);
      }
      this.set(bytes, off);
      return bytes.length;
    }
  }
  return write.apply(this, arguments);
};
module.exports = Object.assign({}, b, { constants: { MAX_LENGTH: b.kMaxLength, MAX_STRING_LENGTH: (1 << 29) - 24 } });
Object.defineProperty(module.exports, 'atob', { get: () => globalThis.atob, enumerable: true });
Object.defineProperty(module.exports, 'btoa', { get: () => globalThis.btoa, enumerable: true });
Object.defineProperty(module.exports, 'Blob', { get: () => globalThis.Blob, enumerable: true });

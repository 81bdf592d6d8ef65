// The global crypto (Web Crypto): getRandomValues, randomUUID, and
// subtle.digest / HMAC importKey, sign, verify, on the host's Go crypto.
const host = __cr.unit('internal/cryptohost');
function domErr(msg, name) { return new DOMException(msg, name); }
const integerTypes = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
function getRandomValues(a) {
  if (!ArrayBuffer.isView(a) || a instanceof DataView || !integerTypes.includes(a[Symbol.toStringTag])) {
    throw domErr("The data argument must be an integer-type TypedArray", 'TypeMismatchError');
  }
  if (a.byteLength > 65536) throw domErr("The ArrayBufferView's byte length (" + a.byteLength + ') exceeds the number of bytes of entropy available via this API (65536)', 'QuotaExceededError');
  new Uint8Array(a.buffer, a.byteOffset, a.byteLength).set(host.random(a.byteLength));
  return a;
}
const hex = [];
for (let i = 0; i < 256; i++) hex.push((i + 0x100).toString(16).slice(1));
function randomUUID() {
  const b = host.random(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  return hex[b[0]] + hex[b[1]] + hex[b[2]] + hex[b[3]] + '-' + hex[b[4]] + hex[b[5]] + '-' + hex[b[6]] + hex[b[7]] + '-' +
    hex[b[8]] + hex[b[9]] + '-' + hex[b[10]] + hex[b[11]] + hex[b[12]] + hex[b[13]] + hex[b[14]] + hex[b[15]];
}
const algs = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };
function hashName(a) {
  const name = typeof a === 'string' ? a : a && a.name;
  const k = typeof name === 'string' ? Object.keys(algs).find((x) => x.toUpperCase() === name.toUpperCase()) : undefined;
  if (!k) throw domErr('Unrecognized algorithm name', 'NotSupportedError');
  return k;
}
function bufferSource(d) {
  if (d instanceof ArrayBuffer) return new Uint8Array(d);
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  throw new TypeError('Failed to execute on SubtleCrypto: The provided value is not of type (ArrayBuffer or ArrayBufferView)');
}
function ab(u8) { return u8.buffer.slice(u8.byteOffset, u8.byteOffset + u8.byteLength); }
const keyData = new WeakMap();
class CryptoKey {
  constructor() { throw new TypeError('Illegal constructor'); }
}
function makeKey(hash, raw, extractable, usages) {
  const k = Object.create(CryptoKey.prototype);
  Object.defineProperties(k, {
    type: { value: 'secret', enumerable: true }, extractable: { value: !!extractable, enumerable: true },
    algorithm: { value: { name: 'HMAC', length: raw.length * 8, hash: { name: hash } }, enumerable: true },
    usages: { value: [...usages], enumerable: true },
  });
  keyData.set(k, raw);
  return k;
}
const subtle = {
  async digest(alg, data) { return ab(host.digest(algs[hashName(alg)], bufferSource(data))); },
  async importKey(format, data, alg, extractable, usages) {
    if (format !== 'raw') throw domErr('Unsupported key format: ' + format + ' (code-runner supports raw HMAC keys)', 'NotSupportedError');
    const name = typeof alg === 'string' ? alg : alg && alg.name;
    if (String(name).toUpperCase() !== 'HMAC') throw domErr('Unrecognized algorithm name (code-runner supports HMAC)', 'NotSupportedError');
    return makeKey(hashName(alg.hash), new Uint8Array(bufferSource(data)), extractable, usages || []);
  },
  async exportKey(format, key) {
    if (format !== 'raw' || !keyData.has(key)) throw domErr('Unsupported key format', 'NotSupportedError');
    if (!key.extractable) throw domErr('key is not extractable', 'InvalidAccessError');
    return ab(keyData.get(key));
  },
  async sign(alg, key, data) {
    if (!keyData.has(key)) throw new TypeError('key is not a CryptoKey');
    return ab(host.digest(algs[key.algorithm.hash.name], bufferSource(data), keyData.get(key)));
  },
  async verify(alg, key, signature, data) {
    const mac = new Uint8Array(await subtle.sign(alg, key, data));
    const sig = bufferSource(signature);
    if (mac.length !== sig.length) return false;
    let d = 0;
    for (let i = 0; i < mac.length; i++) d |= mac[i] ^ sig[i];
    return d === 0;
  },
};
class SubtleCrypto { constructor() { throw new TypeError('Illegal constructor'); } }
Object.setPrototypeOf(subtle, SubtleCrypto.prototype);
class Crypto { constructor() { throw new TypeError('Illegal constructor'); } }
const crypto = Object.create(Crypto.prototype);
Object.defineProperties(crypto, {
  getRandomValues: { value: getRandomValues, enumerable: true, writable: true, configurable: true },
  randomUUID: { value: randomUUID, enumerable: true, writable: true, configurable: true },
  subtle: { value: subtle, enumerable: true, configurable: true },
});
module.exports = { crypto, Crypto, CryptoKey, SubtleCrypto, randomUUID, getRandomValues };

// node:crypto — hashes, HMACs and randomness on the host's Go crypto.
const { Buffer } = require('buffer');
const host = __cr.unit('internal/cryptohost');
const web = __cr.unit('internal/webcrypto');
const hashes = ['md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'sha512-256'];
function norm(alg) {
  const a = String(alg).toLowerCase().replace(/^rsa-/, '');
  const m = { 'sha-1': 'sha1', 'sha-256': 'sha256', 'sha-384': 'sha384', 'sha-512': 'sha512', 'sha-224': 'sha224' }[a] || a;
  if (!hashes.includes(m)) { const e = new Error('Digest method not supported'); e.code = 'ERR_CRYPTO_INVALID_DIGEST'; throw e; }
  return m;
}
function toBuf(data, enc) {
  if (typeof data === 'string') return Buffer.from(data, enc || 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  const e = new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView.');
  e.code = 'ERR_INVALID_ARG_TYPE';
  throw e;
}
class Hash {
  constructor(alg, key) { this._alg = norm(alg); this._key = key; this._chunks = []; this._done = false; }
  update(data, enc) {
    if (this._done) { const e = new Error('Digest already called'); e.code = 'ERR_CRYPTO_HASH_FINALIZED'; throw e; }
    this._chunks.push(toBuf(data, enc));
    return this;
  }
  digest(enc) {
    if (this._done) { const e = new Error('Digest already called'); e.code = 'ERR_CRYPTO_HASH_FINALIZED'; throw e; }
    this._done = true;
    const out = Buffer.from(host.digest(this._alg, Buffer.concat(this._chunks), this._key));
    return enc === undefined || enc === 'buffer' ? out : out.toString(enc);
  }
  copy() { const h = new Hash(this._alg, this._key); h._chunks = this._chunks.slice(); return h; }
}
function randomBytes(n, cb) {
  if (typeof n !== 'number' || n < 0 || n > 2 ** 31 - 1 || !Number.isInteger(n)) {
    const e = new RangeError('The value of "size" is out of range. It must be >= 0 && <= 2147483647. Received ' + n);
    e.code = 'ERR_OUT_OF_RANGE';
    throw e;
  }
  const chunks = [];
  for (let left = n; left > 0; left -= 65536) chunks.push(host.random(Math.min(left, 65536)));
  const b = Buffer.concat(chunks.map((c) => Buffer.from(c)), n);
  if (typeof cb === 'function') { setImmediate(() => cb(null, b)); return undefined; }
  return b;
}
function randomInt(min, max, cb) {
  if (max === undefined || typeof max === 'function') { cb = max; max = min; min = 0; }
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || max <= min) {
    const e = new RangeError('The value of "max" is out of range. It must be greater than the value of "min" (' + min + '). Received ' + max);
    e.code = 'ERR_OUT_OF_RANGE';
    throw e;
  }
  const range = max - min;
  const limit = 2 ** 48 - (2 ** 48 % range);
  let x;
  do { const b = host.random(6); x = b[0] * 2 ** 40 + b[1] * 2 ** 32 + b[2] * 2 ** 24 + b[3] * 2 ** 16 + b[4] * 2 ** 8 + b[5]; } while (x >= limit);
  const r = min + (x % range);
  if (typeof cb === 'function') { setImmediate(() => cb(null, r)); return undefined; }
  return r;
}
function timingSafeEqual(a, b) {
  if (a.byteLength !== b.byteLength) { const e = new RangeError('Input buffers must have the same byte length'); e.code = 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH'; throw e; }
  const x = toBuf(a), y = toBuf(b);
  let d = 0;
  for (let i = 0; i < x.length; i++) d |= x[i] ^ y[i];
  return d === 0;
}
function pbkdf2Sync(password, salt, iterations, keylen, digest) {
  return Buffer.from(host.pbkdf2(toBuf(password), toBuf(salt), iterations, keylen, norm(digest)));
}
function unavailable(name) {
  return function () { const e = new Error('crypto.' + name + ' is not available in code-runner (hashes, HMACs, pbkdf2 and randomness are)'); e.code = 'ERR_CODE_RUNNER_UNAVAILABLE'; throw e; };
}
module.exports = {
  createHash: (alg) => new Hash(alg), createHmac: (alg, key) => new Hash(alg, toBuf(key)), Hash,
  hash: (alg, data, enc) => new Hash(alg).update(data).digest(enc || 'hex'),
  getHashes: () => hashes.slice(), randomBytes, pseudoRandomBytes: randomBytes, randomInt, randomUUID: web.randomUUID,
  randomFillSync(buf, offset, size) { const u = new Uint8Array(buf.buffer || buf, (buf.byteOffset || 0) + (offset || 0), size === undefined ? (buf.byteLength - (offset || 0)) : size); u.set(randomBytes(u.length)); return buf; },
  getRandomValues: web.getRandomValues, timingSafeEqual, pbkdf2Sync,
  pbkdf2(password, salt, it, keylen, digest, cb) { let r, err = null; try { r = pbkdf2Sync(password, salt, it, keylen, digest); } catch (e) { err = e; } setImmediate(() => cb(err, r)); },
  webcrypto: web.crypto, subtle: web.crypto.subtle,
  createCipheriv: unavailable('createCipheriv'), createDecipheriv: unavailable('createDecipheriv'), createSign: unavailable('createSign'),
  createVerify: unavailable('createVerify'), generateKeyPairSync: unavailable('generateKeyPairSync'), scryptSync: unavailable('scryptSync'),
  constants: {},
};

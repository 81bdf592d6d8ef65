// The host's hashes and randomness (Go's crypto), shared by node:crypto
// and the global crypto.
const native = __cr.native;
function bin(u8) {
  let s = '';
  for (let i = 0; i < u8.length; i += 8192) s += String.fromCharCode.apply(null, u8.subarray(i, i + 8192));
  return s;
}
function bytes(s) {
  const u = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return u;
}
function answer(r) {
  if (r.length > 0 && r.charCodeAt(0) === 1) return bytes(r.slice(1));
  const a = __cr.parse(r);
  const e = new Error(__cr.own(a, 'e'));
  const code = __cr.own(a, 'c');
  if (code !== undefined) e.code = code;
  throw e;
}
exports.random = (n) => answer(native('crypto.random', String(n)));
// digest hashes data (Uint8Array) with alg (node's name, e.g. sha256);
// with key, an HMAC.
// A digest is fed to the host in pieces of 1 MiB: a large buffer never
// becomes one huge string on its way there.
const piece = 1 << 20;
exports.digest = (alg, data, key) => {
  const head = key === undefined ? alg : alg + '\u0000' + bin(key);
  if (data.length <= piece) return answer(native('crypto.hash', head, bin(data)));
  const opened = native('crypto.hashOpen', head);
  if (!/^[0-9]+$/.test(opened)) answer(opened);
  for (let i = 0; i < data.length; i += piece) native('crypto.hashWrite', opened, bin(data.subarray(i, i + piece)));
  return answer(native('crypto.hashSum', opened));
};
exports.pbkdf2 = (password, salt, iterations, keylen, digest) =>
  answer(native('crypto.pbkdf2', __cr.stringify({ digest, iterations, keylen, salt: bin(salt) }), bin(password)));
exports.bin = bin;
exports.bytes = bytes;

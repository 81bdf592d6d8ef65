// The host's hashes and randomness (Go's crypto), shared by node:crypto
// and the global crypto. Bytes cross as Uint8Arrays (the binding copies
// them); a refusal comes back as JSON.
const native = __cr.native;
function answer(r) {
  if (r instanceof Uint8Array) return r;
  const a = __cr.parse(r);
  const e = new Error(__cr.own(a, 'e'));
  const code = __cr.own(a, 'c');
  if (code !== undefined) e.code = code;
  throw e;
}
exports.random = (n) => answer(native('crypto.random', String(n)));
// digest hashes data (Uint8Array) with alg (node's name, e.g. sha256);
// with key, an HMAC. A large buffer is fed to the host in pieces of 1 MiB.
const piece = 1 << 20;
exports.digest = (alg, data, key) => {
  if (data.length <= piece) return answer(native('crypto.hash', alg, data, key === undefined ? null : key));
  const opened = native('crypto.hashOpen', alg, key === undefined ? null : key);
  if (!/^[0-9]+$/.test(opened)) answer(opened);
  for (let i = 0; i < data.length; i += piece) native('crypto.hashWrite', opened, data.subarray(i, i + piece));
  return answer(native('crypto.hashSum', opened));
};
exports.pbkdf2 = (password, salt, iterations, keylen, digest) =>
  answer(native('crypto.pbkdf2', __cr.stringify({ digest, iterations, keylen }), password, salt));

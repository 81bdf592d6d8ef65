// node:querystring — querystring-es3, with node's escape/unescape.
const qs = require('querystring-es3');
function unescape(s) {
  try { return decodeURIComponent(s); } catch (_) { return unescapeBuffer(s); }
}
function unescapeBuffer(s) {
  return s.replace(/%([0-9a-fA-F]{2})/g, (m, h) => String.fromCharCode(parseInt(h, 16)));
}
module.exports = { decode: qs.decode, parse: qs.parse, encode: qs.encode, stringify: qs.stringify,
  escape: (s) => encodeURIComponent(s), unescape };

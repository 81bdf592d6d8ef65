// TextEncoder and TextDecoder (WHATWG Encoding): UTF-8, UTF-16LE/BE and
// windows-1252 (the standard's "latin1"), with fatal, ignoreBOM and
// stream. Written here: the npm polyfills are either UTF-8 only or carry
// every legacy encoding's tables.
const labels = {
  'utf-8': ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'],
  'utf-16le': ['csunicode', 'iso-10646-ucs-2', 'ucs-2', 'unicode', 'unicodefeff', 'utf-16', 'utf-16le'],
  'utf-16be': ['unicodefffe', 'utf-16be'],
  'windows-1252': ['ansi_x3.4-1968', 'ascii', 'cp1252', 'cp819', 'csisolatin1', 'ibm819', 'iso-8859-1', 'iso-ir-100', 'iso8859-1', 'iso88591', 'iso_8859-1', 'iso_8859-1:1987', 'l1', 'latin1', 'us-ascii', 'windows-1252', 'x-cp1252'],
};
const byLabel = new Map();
for (const [name, ls] of Object.entries(labels)) for (const l of ls) byLabel.set(l, name);

function rangeError(label) {
  const e = new RangeError('The "' + label + '" encoding is not supported');
  e.code = 'ERR_ENCODING_NOT_SUPPORTED';
  return e;
}
function typeError(msg, code) { const e = new TypeError(msg); e.code = code; return e; }

function utf8Encode(s) {
  const out = new Uint8Array(s.length * 3);
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) { out[j++] = c; continue; }
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xDC00 && d <= 0xDFFF) { c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00); i++; }
    }
    if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
    if (c < 0x800) { out[j++] = 0xC0 | (c >> 6); out[j++] = 0x80 | (c & 63); }
    else if (c < 0x10000) { out[j++] = 0xE0 | (c >> 12); out[j++] = 0x80 | ((c >> 6) & 63); out[j++] = 0x80 | (c & 63); }
    else { out[j++] = 0xF0 | (c >> 18); out[j++] = 0x80 | ((c >> 12) & 63); out[j++] = 0x80 | ((c >> 6) & 63); out[j++] = 0x80 | (c & 63); }
  }
  return out.slice(0, j);
}

class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(input = '') { return utf8Encode(String(input)); }
  encodeInto(src, dest) {
    const s = String(src);
    let read = 0, written = 0;
    for (let i = 0; i < s.length;) {
      const cp = s.codePointAt(i);
      const n = cp >= 0xD800 && cp <= 0xDFFF ? 1 : cp > 0xFFFF ? 2 : 1;
      const b = utf8Encode(s.slice(i, i + n));
      if (written + b.length > dest.length) break;
      dest.set(b, written);
      written += b.length; read += n; i += n;
    }
    return { read, written };
  }
}

function push(parts, codes) {
  for (let i = 0; i < codes.length; i += 8192) parts.push(String.fromCharCode.apply(null, codes.slice(i, i + 8192)));
}

class TextDecoder {
  #enc; #fatal; #ignoreBOM; #pending = []; #bomSeen = false;
  constructor(label = 'utf-8', options = {}) {
    const enc = byLabel.get(String(label).trim().toLowerCase());
    if (!enc) throw rangeError(label);
    this.#enc = enc;
    this.#fatal = !!(options && options.fatal);
    this.#ignoreBOM = !!(options && options.ignoreBOM);
  }
  get encoding() { return this.#enc; }
  get fatal() { return this.#fatal; }
  get ignoreBOM() { return this.#ignoreBOM; }
  decode(input, options) {
    let bytes;
    if (input === undefined) bytes = new Uint8Array(0);
    else if (input instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && input instanceof SharedArrayBuffer)) bytes = new Uint8Array(input);
    else if (ArrayBuffer.isView(input)) bytes = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    else throw typeError('The "input" argument must be an instance of ArrayBuffer or ArrayBufferView. Received ' + (input === null ? 'null' : typeof input), 'ERR_INVALID_ARG_TYPE');
    const stream = !!(options && options.stream);
    if (this.#pending.length) { const b = new Uint8Array(this.#pending.length + bytes.length); b.set(this.#pending); b.set(bytes, this.#pending.length); bytes = b; this.#pending = []; }
    let out;
    if (this.#enc === 'utf-8') out = this.#utf8(bytes, stream);
    else if (this.#enc === 'windows-1252') {
      const codes = new Array(bytes.length);
      // As node 20 does (its oracle): every byte is its own code point,
      // though the standard maps 0x80–0x9F as windows-1252.
      for (let i = 0; i < bytes.length; i++) codes[i] = bytes[i];
      const parts = []; push(parts, codes); out = parts.join('');
    } else out = this.#utf16(bytes, stream, this.#enc === 'utf-16be');
    if (!this.#ignoreBOM && !this.#bomSeen && out.length > 0) {
      if (this.#enc !== 'windows-1252' && out.charCodeAt(0) === 0xFEFF) out = out.slice(1);
      this.#bomSeen = true;
    }
    if (!stream) this.#bomSeen = false;
    return out;
  }
  #bad() {
    if (this.#fatal) { this.#pending = []; this.#bomSeen = false; throw typeError('The encoded data was not valid for encoding ' + this.#enc, 'ERR_ENCODING_INVALID_ENCODED_DATA'); }
    return 0xFFFD;
  }
  #utf8(b, stream) {
    const codes = [], parts = [];
    let i = 0;
    while (i < b.length) {
      const c = b[i];
      if (c < 0x80) { codes.push(c); i++; }
      else {
        let need, min, cp;
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; min = 0x10000; }
        else { codes.push(this.#bad()); i++; continue; }
        let k = 1;
        for (; k <= need; k++) {
          if (i + k >= b.length) break;
          const d = b[i + k];
          let lo = 0x80, hi = 0xBF;
          if (k === 1) {
            if (c === 0xE0) lo = 0xA0; else if (c === 0xED) hi = 0x9F; else if (c === 0xF0) lo = 0x90; else if (c === 0xF4) hi = 0x8F;
          }
          if (d < lo || d > hi) break;
          cp = (cp << 6) | (d & 0x3F);
        }
        if (k <= need) {
          if (i + k >= b.length && stream) { this.#pending = Array.from(b.subarray(i)); break; }
          codes.push(this.#bad()); i += k; continue;
        }
        void min;
        if (cp > 0xFFFF) { cp -= 0x10000; codes.push(0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)); } else codes.push(cp);
        i += need + 1;
      }
      if (codes.length > 8192) { push(parts, codes); codes.length = 0; }
    }
    push(parts, codes);
    return parts.join('');
  }
  #utf16(b, stream, be) {
    const codes = [], parts = [];
    let n = b.length - (b.length % 2);
    let lead = 0;
    for (let i = 0; i < n; i += 2) {
      const u = be ? (b[i] << 8) | b[i + 1] : b[i] | (b[i + 1] << 8);
      if (lead) {
        if (u >= 0xDC00 && u <= 0xDFFF) { codes.push(lead, u); lead = 0; continue; }
        codes.push(this.#bad()); lead = 0;
      }
      if (u >= 0xD800 && u <= 0xDBFF) { lead = u; continue; }
      if (u >= 0xDC00 && u <= 0xDFFF) { codes.push(this.#bad()); continue; }
      codes.push(u);
    }
    if (stream) {
      const rest = Array.from(b.subarray(n));
      if (lead) rest.unshift(...(be ? [lead >> 8, lead & 255] : [lead & 255, lead >> 8]));
      this.#pending = rest;
    } else {
      if (lead) codes.push(this.#bad());
      if (b.length % 2) codes.push(this.#bad());
    }
    push(parts, codes);
    return parts.join('');
  }
}
module.exports = { TextEncoder, TextDecoder };

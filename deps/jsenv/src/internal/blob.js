// Blob and File: bytes held in memory (no host files behind them).
function bytesOf(part) {
  if (part instanceof Blob) return part._bytes;
  if (part instanceof ArrayBuffer) return new Uint8Array(part.slice(0));
  if (ArrayBuffer.isView(part)) return new Uint8Array(part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength));
  return new TextEncoder().encode(String(part));
}
class Blob {
  constructor(parts = [], options = {}) {
    if (parts === null || typeof parts !== 'object' || typeof parts[Symbol.iterator] !== 'function') {
      throw new TypeError('The "sources" argument must be a sequence.');
    }
    const chunks = [...parts].map(bytesOf);
    const size = chunks.reduce((n, c) => n + c.length, 0);
    const bytes = new Uint8Array(size);
    let o = 0;
    for (const c of chunks) { bytes.set(c, o); o += c.length; }
    Object.defineProperty(this, '_bytes', { value: bytes });
    const t = options && options.type !== undefined ? String(options.type) : '';
    Object.defineProperty(this, '_type', { value: /[^\u0020-\u007E]/.test(t) ? '' : t.toLowerCase() });
  }
  get size() { return this._bytes.length; }
  get type() { return this._type; }
  async text() { return new TextDecoder().decode(this._bytes); }
  async arrayBuffer() { return this._bytes.buffer.slice(0); }
  async bytes() { return new Uint8Array(this._bytes); }
  slice(start = 0, end = this.size, type = '') {
    const n = this.size;
    const s = start < 0 ? Math.max(n + start, 0) : Math.min(start, n);
    const e = end < 0 ? Math.max(n + end, 0) : Math.min(end, n);
    return new Blob([this._bytes.subarray(s, Math.max(s, e))], { type });
  }
  stream() { throw new TypeError('Blob.stream() is not available in code-runner; use arrayBuffer() or text()'); }
  get [Symbol.toStringTag]() { return 'Blob'; }
}
class File extends Blob {
  constructor(parts, name, options = {}) {
    super(parts, options);
    Object.defineProperty(this, '_name', { value: String(name) });
    Object.defineProperty(this, '_lm', { value: options.lastModified === undefined ? Date.now() : Number(options.lastModified) });
  }
  get name() { return this._name; }
  get lastModified() { return this._lm; }
  get [Symbol.toStringTag]() { return 'File'; }
}
module.exports = { Blob, File };

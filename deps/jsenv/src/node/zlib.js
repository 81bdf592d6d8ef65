// node:zlib — gzip, deflate and their inverses (no brotli), on
// browserify-zlib's port of zlib (pako), with node 20's options and limits:
// the options are checked as node checks them (its errors, its order), and
// a one-step call stops as soon as its output passes maxOutputLength
// (RangeError ERR_BUFFER_TOO_LARGE), so a guest that guards itself against
// a bomb gets an error it can catch. The one-step callback forms run the
// same code and answer on a later tick. Streams are browserify-zlib's own.
const z = require('browserify-zlib');
const { Buffer } = require('buffer');

const kMaxLength = 2 ** 32;

// node 20's zlib.constants, brotli's left out (there is no brotli here).
const constants = Object.freeze({
  Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_BLOCK: 5,
  Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3,
  Z_MEM_ERROR: -4, Z_BUF_ERROR: -5, Z_VERSION_ERROR: -6,
  Z_NO_COMPRESSION: 0, Z_BEST_SPEED: 1, Z_BEST_COMPRESSION: 9, Z_DEFAULT_COMPRESSION: -1,
  Z_FILTERED: 1, Z_HUFFMAN_ONLY: 2, Z_RLE: 3, Z_FIXED: 4, Z_DEFAULT_STRATEGY: 0, ZLIB_VERNUM: 4880,
  DEFLATE: 1, INFLATE: 2, GZIP: 3, GUNZIP: 4, DEFLATERAW: 5, INFLATERAW: 6, UNZIP: 7,
  Z_MIN_WINDOWBITS: 8, Z_MAX_WINDOWBITS: 15, Z_DEFAULT_WINDOWBITS: 15,
  Z_MIN_CHUNK: 64, Z_MAX_CHUNK: Infinity, Z_DEFAULT_CHUNK: 16384,
  Z_MIN_MEMLEVEL: 1, Z_MAX_MEMLEVEL: 9, Z_DEFAULT_MEMLEVEL: 8,
  Z_MIN_LEVEL: -1, Z_MAX_LEVEL: 9, Z_DEFAULT_LEVEL: -1,
});

function outOfRange(name, range, value) {
  const shown = Number.isInteger(value) && Math.abs(value) > 2 ** 32
    ? String(value).replace(/\B(?=(\d{3})+(?!\d))/g, '_')
    : require('util').inspect(value);
  return __cr.codedError(RangeError, 'ERR_OUT_OF_RANGE', 'The value of "' + name + '" is out of range. It must be ' + range + '. Received ' + shown);
}

// finiteOrNothing is node's checkFiniteNumber: undefined and NaN mean
// "the default", a non-number is a TypeError, ±Infinity out of range.
function finiteOrNothing(value, name) {
  if (value === undefined) return false;
  if (Number.isFinite(value)) return true;
  if (Number.isNaN(value)) return false;
  if (typeof value !== 'number') {
    throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "' + name + '" property must be of type number. Received ' + __cr.received(value));
  }
  throw outOfRange(name, 'a finite number', value);
}

function inRange(value, name, lower, upper, dflt) {
  if (!finiteOrNothing(value, name)) return dflt;
  if (value < lower || value > upper) throw outOfRange(name, '>= ' + lower + ' and <= ' + upper, value);
  return value;
}

function isBytes(v) {
  return ArrayBuffer.isView(v) || v instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && v instanceof SharedArrayBuffer);
}

function asBuffer(v) {
  if (Buffer.isBuffer(v)) return v;
  if (ArrayBuffer.isView(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return Buffer.from(v);
}

// options is node's Zlib and ZlibBase checks, in their order, answering
// what browserify-zlib's engine takes and the output cap.
function options(opts, mode) {
  const out = { finishFlush: constants.Z_FINISH };
  let maxOutputLength = kMaxLength;
  if (opts === undefined || opts === null) return { engine: out, maxOutputLength, info: false };
  const inflating = mode === constants.INFLATE || mode === constants.GUNZIP || mode === constants.UNZIP;
  if ((opts.windowBits == null || opts.windowBits === 0) && inflating) {
    out.windowBits = 0;
  } else {
    const min = constants.Z_MIN_WINDOWBITS + (mode === constants.GZIP ? 1 : 0);
    out.windowBits = inRange(opts.windowBits, 'options.windowBits', min, constants.Z_MAX_WINDOWBITS, constants.Z_DEFAULT_WINDOWBITS);
  }
  out.level = inRange(opts.level, 'options.level', constants.Z_MIN_LEVEL, constants.Z_MAX_LEVEL, constants.Z_DEFAULT_COMPRESSION);
  out.memLevel = inRange(opts.memLevel, 'options.memLevel', constants.Z_MIN_MEMLEVEL, constants.Z_MAX_MEMLEVEL, constants.Z_DEFAULT_MEMLEVEL);
  out.strategy = inRange(opts.strategy, 'options.strategy', constants.Z_DEFAULT_STRATEGY, constants.Z_FIXED, constants.Z_DEFAULT_STRATEGY);
  const dictionary = opts.dictionary;
  if (dictionary !== undefined) {
    if (!isBytes(dictionary)) {
      throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "options.dictionary" property must be an instance of Buffer, TypedArray, DataView, or ArrayBuffer. Received ' + __cr.received(dictionary));
    }
    out.dictionary = asBuffer(dictionary);
  }
  const chunkSize = opts.chunkSize;
  if (finiteOrNothing(chunkSize, 'options.chunkSize')) {
    if (chunkSize < constants.Z_MIN_CHUNK) throw outOfRange('options.chunkSize', '>= ' + constants.Z_MIN_CHUNK, chunkSize);
    out.chunkSize = chunkSize;
  }
  out.flush = inRange(opts.flush, 'options.flush', constants.Z_NO_FLUSH, constants.Z_BLOCK, constants.Z_NO_FLUSH);
  out.finishFlush = inRange(opts.finishFlush, 'options.finishFlush', constants.Z_NO_FLUSH, constants.Z_BLOCK, constants.Z_FINISH);
  maxOutputLength = inRange(opts.maxOutputLength, 'options.maxOutputLength', 1, kMaxLength, kMaxLength);
  // node's binding takes them as C integers.
  for (const k of ['windowBits', 'level', 'memLevel', 'strategy', 'chunkSize']) {
    if (typeof out[k] === 'number') out[k] = Math.trunc(out[k]);
  }
  return { engine: out, maxOutputLength, info: !!opts.info };
}

function input(buffer) {
  if (typeof buffer === 'string') return Buffer.from(buffer);
  if (isBytes(buffer)) return asBuffer(buffer);
  throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "buffer" argument must be of type string or an instance of Buffer, TypedArray, DataView, or ArrayBuffer. Received ' + __cr.received(buffer));
}

// processSync is node's processChunkSync over browserify-zlib's engine:
// the output chunk by chunk, stopping once it passes the cap.
function processSync(engine, chunk, flushFlag, maxOutputLength) {
  let error;
  engine.on('error', (e) => { error = e; });
  const handle = engine._handle;
  const chunkSize = engine._chunkSize;
  let inOff = 0, availIn = chunk.length, out = Buffer.allocUnsafe(chunkSize), outOff = 0;
  const buffers = [];
  let nread = 0;
  for (;;) {
    const res = handle.writeSync(flushFlag, chunk, inOff, availIn, out, outOff, chunkSize - outOff);
    if (engine._hadError) break;
    const availInAfter = res[0], availOutAfter = res[1];
    const have = chunkSize - outOff - availOutAfter;
    if (have > 0) {
      buffers.push(out.subarray(outOff, outOff + have));
      outOff += have;
      nread += have;
      if (nread > maxOutputLength) {
        engine.close();
        throw __cr.codedError(RangeError, 'ERR_BUFFER_TOO_LARGE', 'Cannot create a Buffer larger than ' + maxOutputLength + ' bytes');
      }
    }
    if (availOutAfter === 0 || outOff >= chunkSize) {
      out = Buffer.allocUnsafe(chunkSize);
      outOff = 0;
    }
    if (availOutAfter !== 0) break;
    inOff += availIn - availInAfter;
    availIn = availInAfter;
  }
  if (error) throw error;
  engine.close();
  return Buffer.concat(buffers, nread);
}

const engines = {
  deflate: [z.Deflate, constants.DEFLATE], inflate: [z.Inflate, constants.INFLATE],
  gzip: [z.Gzip, constants.GZIP], gunzip: [z.Gunzip, constants.GUNZIP],
  deflateRaw: [z.DeflateRaw, constants.DEFLATERAW], inflateRaw: [z.InflateRaw, constants.INFLATERAW],
  unzip: [z.Unzip, constants.UNZIP],
};

const api = Object.create(null);
for (const [name, [Engine, mode]] of Object.entries(engines)) {
  const sync = {
    [name + 'Sync'](buffer, opts) {
      const data = input(buffer);
      const o = options(opts, mode);
      const engine = new Engine(o.engine);
      const result = processSync(engine, data, o.engine.finishFlush, o.maxOutputLength);
      return o.info ? { buffer: result, engine } : result;
    },
  }[name + 'Sync'];
  api[name + 'Sync'] = sync;
  api[name] = {
    [name](buffer, opts, callback) {
      if (typeof opts === 'function') {
        callback = opts;
        opts = {};
      }
      if (typeof callback !== 'function') {
        throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function. Received ' + __cr.received(callback));
      }
      const data = input(buffer);
      let result, error = null;
      try {
        result = sync(data, opts);
      } catch (e) {
        error = e;
      }
      setImmediate(() => (error ? callback(error) : callback(null, result)));
    },
  }[name];
}

// crc32 is node's zlib.crc32(data[, value]): the CRC-32 of a string (UTF-8)
// or bytes, continuing from value.
let crcTable;
function crc32(data, value = 0) {
  if (typeof data !== 'string' && !ArrayBuffer.isView(data)) {
    throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received ' + __cr.received(data));
  }
  if (typeof value !== 'number') {
    throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "value" argument must be of type number. Received ' + __cr.received(value));
  }
  if (crcTable === undefined) {
    crcTable = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c;
    }
  }
  const bytes = typeof data === 'string' ? Buffer.from(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let crc = (value ^ -1) | 0;
  for (let i = 0; i < bytes.length; i++) crc = crcTable[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

module.exports = Object.assign({}, z, api, { constants, crc32, codes: z.codes });

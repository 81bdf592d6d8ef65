// node:fs and node:fs/promises over the runtime's iii.files scratch
// directory, seen as /scratch: one level of plain names, its quota
// (contract §10, §25.6). A path is resolved to a name here, before the
// host is asked anything; the host checks the name again.
const { Buffer } = require('buffer');
const native = __cr.native;
const parse = __cr.parse, stringify = __cr.stringify, own = __cr.own;

const messages = {
  ENOENT: 'no such file or directory', EACCES: 'permission denied', EISDIR: 'illegal operation on a directory',
  ENOSPC: 'no space left on device', EPERM: 'operation not permitted', ENOTDIR: 'not a directory',
  EEXIST: 'file already exists', ENOSYS: 'function not implemented', EBADF: 'bad file descriptor',
};
const errnos = { ENOENT: -2, EACCES: -13, EISDIR: -21, ENOSPC: -28, EPERM: -1, ENOTDIR: -20, EEXIST: -17, ENOSYS: -38, EBADF: -9 };
function fsError(code, syscall, path, dest) {
  let msg = code + ': ' + messages[code] + ', ' + syscall;
  if (path !== undefined) msg += " '" + path + "'";
  if (dest !== undefined) msg += " -> '" + dest + "'";
  const e = new Error(msg);
  e.errno = errnos[code]; e.code = code; e.syscall = syscall;
  if (path !== undefined) e.path = path;
  if (dest !== undefined) e.dest = dest;
  return e;
}

// target resolves a path: {dir: true} for the scratch directory itself,
// {name} for a file in it; anything else throws ENOENT or EACCES.
function target(p, syscall) {
  if (p !== null && typeof p === 'object' && typeof p.href === 'string' && typeof p.protocol === 'string') p = p.protocol === 'file:' ? decodeURIComponent(p.pathname) : String(p.href);
  else if (Buffer.isBuffer(p) || p instanceof Uint8Array) p = Buffer.from(p).toString();
  if (typeof p !== 'string') {
    const e = new TypeError('The "path" argument must be of type string or an instance of Buffer or URL. Received ' + (p === null ? 'null' : typeof p));
    e.code = 'ERR_INVALID_ARG_TYPE';
    throw e;
  }
  if (!__cr.filesOn) throw fsError('EACCES', syscall, p);
  let rest = p;
  if (rest === '/scratch' || rest === '/scratch/' || rest === '.' || rest === './' || rest === '') {
    if (rest === '') throw fsError('ENOENT', syscall, p);
    return { dir: true, path: p };
  }
  if (rest.startsWith('/scratch/')) rest = rest.slice(9);
  else if (rest.startsWith('./')) rest = rest.slice(2);
  else if (rest.startsWith('/')) throw fsError(rest.startsWith('/scratch') ? 'ENOENT' : 'EACCES', syscall, p);
  if (rest === '' || rest.includes('/') || rest === '..' || rest === '.' || rest.includes('\u0000')) {
    throw fsError(rest.startsWith('..') ? 'EACCES' : 'ENOENT', syscall, p);
  }
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(rest)) throw fsError('EACCES', syscall, p);
  return { name: rest, path: p };
}

function check(r, syscall, path) {
  const msg = own(r, 'e');
  if (msg === undefined) return own(r, 'v');
  const quota = own(r, 'q') === true;
  let code = 'EACCES';
  if (quota) code = 'ENOSPC';
  else if (/no such file/.test(msg)) code = 'ENOENT';
  else if (/not a regular file/.test(msg)) code = 'EISDIR';
  const e = fsError(code, syscall, path);
  if (quota) __cr.markQuota(e, msg);
  throw e;
}
function nameArg(name) { return stringify({ name, t: 'string' }); }

function encodingOf(options) {
  if (typeof options === 'string') return options;
  if (options && typeof options === 'object' && options.encoding) return options.encoding;
  return null;
}
function flagOf(options, dflt) {
  return options && typeof options === 'object' && options.flag ? options.flag : dflt;
}

function readRaw(t, syscall) {
  if (t.dir) throw fsError('EISDIR', syscall === 'open' ? 'read' : syscall, undefined);
  const raw = native('files.read', nameArg(t.name));
  if (raw instanceof Uint8Array) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  return check(parse(raw), syscall, t.path);
}

function stdinLike(p) { return p === 0 || p === '/dev/stdin'; }

function readFileSync(p, options) {
  if (stdinLike(p)) { const enc = encodingOf(options); return enc ? '' : Buffer.alloc(0); }
  if (typeof p === 'number') throw fsError('EBADF', 'read');
  const t = target(p, 'open');
  const b = readRaw(t, 'open');
  const enc = encodingOf(options);
  return enc ? b.toString(enc) : b;
}

function toBuffer(data, options) {
  if (typeof data === 'string') return Buffer.from(data, encodingOf(options) || 'utf8');
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const e = new TypeError('The "data" argument must be of type string or an instance of Buffer, TypedArray, or DataView.');
  e.code = 'ERR_INVALID_ARG_TYPE';
  throw e;
}

function writeRaw(t, buf) {
  if (t.dir) throw fsError('EISDIR', 'open', t.path);
  check(parse(native('files.write', stringify({ name: t.name, t: 'string', has: true, binary: true }), buf)), 'open', t.path);
}

function writeFileSync(p, data, options) {
  if (p === 1 || p === 2) { process[p === 1 ? 'stdout' : 'stderr'].write(typeof data === 'string' ? data : Buffer.from(data).toString()); return; }
  const t = target(p, 'open');
  let buf = toBuffer(data, options);
  const flag = flagOf(options, 'w');
  if (flag[0] === 'a' && !t.dir) {
    // Appended where the file ends, by the host: nothing read back.
    check(parse(native('files.write', stringify({ name: t.name, t: 'string', has: true, binary: true, append: true }), buf)), 'open', t.path);
    return;
  } else if (flag.includes('x') && statName(t, 'open', true)) {
    throw fsError('EEXIST', 'open', t.path);
  }
  writeRaw(t, buf);
}
function appendFileSync(p, data, options) {
  writeFileSync(p, data, Object.assign({}, typeof options === 'string' ? { encoding: options } : options, { flag: 'a' }));
}

function statName(t, syscall, quiet) {
  const r = parse(native('files.stat', nameArg(t.name)));
  if (own(r, 'e') !== undefined) { if (quiet) return null; check(r, syscall, t.path); }
  return own(r, 'v');
}

class Stats {
  constructor(isDir, size, mtimeMs) {
    this.dev = 1; this.mode = isDir ? 0o40700 : 0o100600; this.nlink = 1; this.uid = 0; this.gid = 0; this.rdev = 0;
    this.blksize = 4096; this.ino = 0; this.size = size; this.blocks = Math.ceil(size / 512);
    this.atimeMs = mtimeMs; this.mtimeMs = mtimeMs; this.ctimeMs = mtimeMs; this.birthtimeMs = mtimeMs;
    this.atime = new Date(mtimeMs); this.mtime = new Date(mtimeMs); this.ctime = new Date(mtimeMs); this.birthtime = new Date(mtimeMs);
    Object.defineProperty(this, '_dir', { value: isDir });
  }
  isFile() { return !this._dir; }
  isDirectory() { return this._dir; }
  isSymbolicLink() { return false; }
  isBlockDevice() { return false; }
  isCharacterDevice() { return false; }
  isFIFO() { return false; }
  isSocket() { return false; }
}
class Dirent {
  constructor(name) { this.name = name; this.parentPath = '/scratch'; this.path = '/scratch'; }
  isFile() { return true; }
  isDirectory() { return false; }
  isSymbolicLink() { return false; }
  isBlockDevice() { return false; }
  isCharacterDevice() { return false; }
  isFIFO() { return false; }
  isSocket() { return false; }
}

function statSync(p, options) {
  let t;
  try {
    t = target(p, 'stat');
    if (t.dir) return new Stats(true, 4096, Date.now());
    const st = statName(t, 'stat');
    return new Stats(false, st.size, st.mtime_ms);
  } catch (e) {
    if (options && options.throwIfNoEntry === false && e.code === 'ENOENT') return undefined;
    throw e;
  }
}
function existsSync(p) {
  try { return statSync(p) !== undefined; } catch (_) { return false; }
}
function accessSync(p) { statSync(p); }
function readdirSync(p, options) {
  const t = target(p, 'scandir');
  if (!t.dir) {
    if (statName(t, 'scandir', true)) throw fsError('ENOTDIR', 'scandir', t.path);
    throw fsError('ENOENT', 'scandir', t.path);
  }
  const names = check(parse(native('files.list', '')), 'scandir', t.path).map((f) => f.name);
  if (options && typeof options === 'object' && options.withFileTypes) return names.map((n) => new Dirent(n));
  return names;
}
function unlinkSync(p) {
  const t = target(p, 'unlink');
  if (t.dir) throw fsError('EISDIR', 'unlink', t.path);
  statName(t, 'unlink');
  check(parse(native('files.remove', nameArg(t.name))), 'unlink', t.path);
}
function rmSync(p, options) {
  const t = target(p, 'rm');
  if (t.dir) throw fsError('EPERM', 'rm', t.path);
  if (!statName(t, 'rm', true)) { if (options && options.force) return; throw fsError('ENOENT', 'rm', t.path); }
  check(parse(native('files.remove', nameArg(t.name))), 'rm', t.path);
}
function renameSync(a, b) {
  const ta = target(a, 'rename'), tb = target(b, 'rename');
  if (ta.dir || tb.dir) throw fsError('EPERM', 'rename', ta.path, tb.path);
  const r = parse(native('files.rename', stringify({ from: ta.name, to: tb.name })));
  if (own(r, 'e') !== undefined) {
    if (/no such file/.test(own(r, 'e'))) throw fsError('ENOENT', 'rename', ta.path, tb.path);
    throw fsError('EACCES', 'rename', ta.path, tb.path);
  }
}
function copyFileSync(a, b) {
  const ta = target(a, 'copyfile'), tb = target(b, 'copyfile');
  writeRaw(tb, readRaw(ta, 'copyfile'));
}
function mkdirSync(p, options) {
  const t = target(p, 'mkdir');
  if (t.dir) {
    if (options && options.recursive) return undefined;
    throw fsError('EEXIST', 'mkdir', t.path);
  }
  throw fsError('EPERM', 'mkdir', t.path);
}
function rmdirSync(p) { throw fsError('EPERM', 'rmdir', String(p)); }
function realpathSync(p) {
  const t = target(p, 'realpath');
  if (t.dir) return '/scratch';
  statName(t, 'realpath');
  return '/scratch/' + t.name;
}
realpathSync.native = realpathSync;
function unsupported(name) {
  return function () { throw fsError('ENOSYS', name); };
}

const sync = {
  readFileSync, writeFileSync, appendFileSync, existsSync, statSync, lstatSync: statSync, accessSync, readdirSync,
  unlinkSync, rmSync, renameSync, copyFileSync, mkdirSync, rmdirSync, realpathSync,
  mkdtempSync: unsupported('mkdtemp'), openSync: unsupported('open'), symlinkSync: unsupported('symlink'),
  linkSync: unsupported('link'), chmodSync() {}, utimesSync() {}, truncateSync(p, len) {
    const t = target(p, 'open');
    const b = readRaw(t, 'open');
    const n = len || 0;
    writeRaw(t, n <= b.length ? b.subarray(0, n) : Buffer.concat([b, Buffer.alloc(n - b.length)]));
  },
};

const fs = { constants: { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, COPYFILE_EXCL: 1 },
  Stats, Dirent, F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1 };
const promises = { constants: fs.constants };
for (const [k, f] of Object.entries(sync)) {
  fs[k] = f;
  const base = k.slice(0, -4);
  if (base === 'exists') {
    fs.exists = (p, cb) => { const r = existsSync(p); queueMicrotask(() => cb(r)); };
    continue;
  }
  fs[base] = function (...args) {
    const cb = args.pop();
    if (typeof cb !== 'function') { const e = new TypeError('The "cb" argument must be of type function. Received ' + typeof cb); e.code = 'ERR_INVALID_ARG_TYPE'; throw e; }
    let r, err = null;
    try { r = f(...args); } catch (e) { err = e; }
    setImmediate(() => (err ? cb(err) : cb(null, r)));
  };
  promises[base] = async (...args) => f(...args);
}
promises.access = async (p) => { statSync(p); };
fs.promises = promises;
fs.createReadStream = function (p, options) {
  const { Readable } = require('stream');
  const data = readFileSync(p, options);
  return Readable.from([data]);
};
fs.createWriteStream = function (p, options) {
  const { Writable } = require('stream');
  writeFileSync(p, '', options && options.flags ? { flag: options.flags } : undefined);
  return new Writable({ write(chunk, enc, cb) { try { appendFileSync(p, chunk); cb(); } catch (e) { cb(e); } } });
};
module.exports = fs;

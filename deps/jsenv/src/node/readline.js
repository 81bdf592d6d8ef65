// node:readline — node's line reader over any readable stream, without a
// terminal: a guest's process.stdin ends at once (as under
// `node prog.js < /dev/null`), so a program reading its input runs and sees
// none; a stream of the guest's own (Readable.from, a PassThrough) is read
// line by line as node reads it. Node's non-terminal rules: lines end at
// \n, \r\n or a lone \r; what follows the last end of line is a line when
// the input ends; then 'close'. A question waits for the next line;
// `for await (const line of rl)` reads lines until 'close', and leaving the
// loop early closes the interface.
const EventEmitter = require('events');
const { StringDecoder } = require('string_decoder');

const kQuestion = Symbol('question');
const kQueue = Symbol('lineQueue');
const kDecoder = Symbol('decoder');
const kBuffer = Symbol('lineBuffer');
const kSawReturn = Symbol('sawReturnAt');
const kListeners = Symbol('inputListeners');
const kClosed = Symbol('closed');
const lineEnding = /\r?\n|\r(?!\n)/g;


function useAfterClose(above) {
  return __cr.codedError(Error, 'ERR_USE_AFTER_CLOSE', 'readline was closed', above);
}

function describe(v) {
  return ' Received ' + __cr.received(v);
}

class Interface extends EventEmitter {
  constructor(input, output, completer, terminal) {
    super();
    let options = input;
    if (!(input && typeof input.on !== 'function' && 'input' in input)) {
      options = { input, output, completer, terminal };
    }
    input = options.input;
    output = options.output;
    if (input == null || typeof input.on !== 'function') {
      throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "input" argument must be an instance of Stream.' + describe(input));
    }
    if (options.completer !== undefined && typeof options.completer !== 'function') {
      throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_VALUE', "The argument 'completer' is invalid." + describe(options.completer));
    }
    const crlfDelay = Number(options.crlfDelay);
    this.input = input;
    this.output = output;
    this.completer = options.completer;
    this.terminal = !!(options.terminal === undefined ? output && output.isTTY : options.terminal);
    this.crlfDelay = crlfDelay ? Math.max(100, crlfDelay) : 100;
    this.history = [];
    this.historySize = options.historySize === undefined ? 30 : options.historySize;
    this.line = '';
    this[kClosed] = false;
    this.paused = false;
    this._prompt = options.prompt === undefined ? '> ' : String(options.prompt);
    this[kQuestion] = null;
    this[kQueue] = undefined;
    this[kDecoder] = new StringDecoder('utf8');
    this[kBuffer] = null;
    this[kSawReturn] = 0;

    const ondata = (data) => this.#normalWrite(data);
    const onend = () => {
      if (typeof this[kBuffer] === 'string' && this[kBuffer].length > 0) {
        this.emit('line', this[kBuffer]);
      }
      this.close();
    };
    const onerror = (err) => this.emit('error', err);
    this[kListeners] = { ondata, onend, onerror };
    input.on('error', onerror);
    input.on('data', ondata);
    input.on('end', onend);
    this.once('close', () => {
      input.removeListener('data', ondata);
      input.removeListener('error', onerror);
      input.removeListener('end', onend);
    });
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) {
        queueMicrotask(() => this.close());
      } else {
        const onabort = () => this.close();
        signal.addEventListener('abort', onabort, { once: true });
        this.once('close', () => signal.removeEventListener('abort', onabort));
      }
    }
    if (typeof input.resume === 'function') input.resume();
  }

  get columns() {
    return this.output && this.output.columns ? this.output.columns : Infinity;
  }

  setPrompt(prompt) { this._prompt = prompt; }

  getPrompt() { return this._prompt; }

  prompt() {
    if (this.paused) this.resume();
    this.#writeToOutput(this._prompt);
  }

  question(query, options, cb) {
    cb = typeof options === 'function' ? options : cb;
    if (this[kClosed]) throw useAfterClose(Interface.prototype.question);
    if (options && typeof options === 'object' && options.signal) {
      const signal = options.signal;
      if (signal.aborted) return;
      const onabort = () => { this[kQuestion] = null; };
      signal.addEventListener('abort', onabort, { once: true });
      const inner = cb;
      cb = (answer) => { signal.removeEventListener('abort', onabort); inner(answer); };
    }
    if (typeof cb !== 'function') return;
    if (this[kQuestion]) {
      this.prompt();
      return;
    }
    this[kQuestion] = cb;
    this.#writeToOutput(query);
    if (this.paused) this.resume();
  }

  write(data) {
    if (this.paused) this.resume();
    if (data != null) this.#normalWrite(data);
  }

  pause() {
    if (this.paused) return this;
    if (typeof this.input.pause === 'function') this.input.pause();
    this.paused = true;
    this.emit('pause');
    return this;
  }

  resume() {
    if (!this.paused) return this;
    if (typeof this.input.resume === 'function') this.input.resume();
    this.paused = false;
    this.emit('resume');
    return this;
  }

  close() {
    if (this[kClosed]) return;
    this.pause();
    this[kClosed] = true;
    this.emit('close');
  }

  getCursorPos() { return { rows: 0, cols: this.cursor || 0 }; }

  [Symbol.asyncIterator]() {
    if (this[kQueue] === undefined) {
      const lines = [];
      const waiting = [];
      let done = this[kClosed];
      const onLine = (line) => {
        if (waiting.length) waiting.shift().resolve({ value: line, done: false });
        else lines.push(line);
      };
      const onClose = () => {
        done = true;
        this.removeListener('line', onLine);
        while (waiting.length) waiting.shift().resolve({ value: undefined, done: true });
      };
      this.on('line', onLine);
      this.once('close', onClose);
      const rl = this;
      this[kQueue] = {
        next() {
          if (lines.length) return Promise.resolve({ value: lines.shift(), done: false });
          if (done) return Promise.resolve({ value: undefined, done: true });
          return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
        },
        return() {
          lines.length = 0;
          rl.close();
          onClose();
          return Promise.resolve({ value: undefined, done: true });
        },
        throw(err) {
          rl.close();
          onClose();
          return Promise.reject(err);
        },
        [Symbol.asyncIterator]() { return this; },
      };
    }
    return this[kQueue];
  }

  #onLine(line) {
    const answer = this[kQuestion];
    if (answer) {
      this[kQuestion] = null;
      answer(line);
    } else {
      this.emit('line', line);
    }
  }

  #writeToOutput(text) {
    if (typeof text !== 'string') {
      throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "stringToWrite" argument must be of type string.' + describe(text));
    }
    if (this.output != null) this.output.write(text);
  }

  // node's kNormalWrite: decode, split at line endings, keep the tail.
  #normalWrite(b) {
    if (b === undefined) return;
    let string = typeof b === 'string' ? b : this[kDecoder].write(b);
    if (this[kSawReturn] && Date.now() - this[kSawReturn] <= this.crlfDelay) {
      if (string.codePointAt(0) === 10) string = string.slice(1);
      this[kSawReturn] = 0;
    }
    const newPartContainsEnding = lineEnding.test(string);
    lineEnding.lastIndex = 0;
    if (typeof this[kBuffer] === 'string') {
      string = this[kBuffer] + string;
      this[kBuffer] = null;
    }
    if (newPartContainsEnding) {
      this[kSawReturn] = string.endsWith('\r') ? Date.now() : 0;
      const lines = string.split(lineEnding);
      this[kBuffer] = lines.pop();
      for (const line of lines) this.#onLine(line);
    } else if (string) {
      this[kBuffer] = string;
    }
  }
}

function createInterface(input, output, completer, terminal) {
  return new Interface(input, output, completer, terminal);
}

// The ANSI cursor controls: what node writes to the stream; with no stream
// (or nothing to move) the callback runs on the next tick and true is the answer.
const CSI = '\x1b[';

function writeOr(stream, data, callback) {
  if (stream == null || data === '') {
    if (typeof callback === 'function') process.nextTick(callback, null);
    return true;
  }
  return stream.write(data, callback);
}

function clearLine(stream, dir, callback) {
  return writeOr(stream, dir < 0 ? CSI + '1K' : dir > 0 ? CSI + '0K' : CSI + '2K', callback);
}

function clearScreenDown(stream, callback) {
  return writeOr(stream, CSI + '0J', callback);
}

function cursorTo(stream, x, y, callback) {
  if (typeof y === 'function') { callback = y; y = undefined; }
  if (Number.isNaN(x)) throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_VALUE', "The argument 'x' is invalid. Received NaN");
  if (Number.isNaN(y)) throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_VALUE', "The argument 'y' is invalid. Received NaN");
  if (typeof x !== 'number') return writeOr(null, '', callback);
  return writeOr(stream, typeof y !== 'number' ? CSI + (x + 1) + 'G' : CSI + (y + 1) + ';' + (x + 1) + 'H', callback);
}

function moveCursor(stream, dx, dy, callback) {
  let data = '';
  if (dx < 0) data += CSI + -dx + 'D';
  else if (dx > 0) data += CSI + dx + 'C';
  if (dy < 0) data += CSI + -dy + 'A';
  else if (dy > 0) data += CSI + dy + 'B';
  return writeOr(stream, data, callback);
}

// Keypress events come from a terminal; a guest has none.
function emitKeypressEvents() {}

module.exports = {
  Interface, clearLine, clearScreenDown, createInterface, cursorTo, emitKeypressEvents, moveCursor,
};
Object.defineProperty(module.exports, 'promises', {
  configurable: true, enumerable: true, get() { return require('readline/promises'); },
});

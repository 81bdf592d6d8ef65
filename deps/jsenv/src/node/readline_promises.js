// node:readline/promises — readline's Interface whose question answers a
// promise, and Readline, which queues cursor moves and writes them on
// commit().
const readline = require('readline');


function abortError(signal) {
  const e = new Error('The operation was aborted', { cause: signal && signal.reason });
  e.name = 'AbortError';
  e.code = 'ABORT_ERR';
  return e;
}

class Interface extends readline.Interface {
  question(query, options = {}) {
    return new Promise((resolve, reject) => {
      const signal = options && options.signal;
      if (signal) {
        if (signal.aborted) {
          reject(abortError(signal));
          return;
        }
        const onabort = () => reject(abortError(signal));
        signal.addEventListener('abort', onabort, { once: true });
        const settle = resolve;
        resolve = (answer) => { signal.removeEventListener('abort', onabort); settle(answer); };
      }
      try {
        super.question(query, options, resolve);
      } catch (e) {
        reject(e);
      }
    });
  }
}

function createInterface(input, output, completer, terminal) {
  return new Interface(input, output, completer, terminal);
}

const CSI = '\x1b[';

class Readline {
  #stream;
  #todo = [];
  #autoCommit;

  constructor(stream, options = undefined) {
    if (stream == null || typeof stream.write !== 'function') {
      throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "stream" argument must be an instance of Writable.');
    }
    this.#stream = stream;
    this.#autoCommit = !!(options && options.autoCommit);
  }

  #queue(data) {
    if (this.#autoCommit) process.nextTick(() => this.#stream.write(data));
    else this.#todo.push(data);
    return this;
  }

  cursorTo(x, y = undefined) {
    if (!Number.isInteger(x)) throw __cr.codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "x" argument must be of type number.');
    return this.#queue(typeof y === 'number' ? CSI + (y + 1) + ';' + (x + 1) + 'H' : CSI + (x + 1) + 'G');
  }

  moveCursor(dx, dy) {
    if (dx || dy) {
      let data = '';
      if (dx < 0) data += CSI + -dx + 'D';
      else if (dx > 0) data += CSI + dx + 'C';
      if (dy < 0) data += CSI + -dy + 'A';
      else if (dy > 0) data += CSI + dy + 'B';
      this.#queue(data);
    }
    return this;
  }

  clearLine(dir) {
    return this.#queue(dir < 0 ? CSI + '1K' : dir > 0 ? CSI + '0K' : CSI + '2K');
  }

  clearScreenDown() { return this.#queue(CSI + '0J'); }

  commit() {
    const data = this.#todo.join('');
    this.#todo = [];
    return new Promise((resolve) => this.#stream.write(data, resolve));
  }

  rollback() {
    this.#todo = [];
    return this;
  }
}

module.exports = { Interface, Readline, createInterface };

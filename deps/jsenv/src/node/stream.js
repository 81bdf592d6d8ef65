// node:stream — stream-browserify (readable-stream 3).
const s = require('stream-browserify');
const { promisify } = require('util');
s.promises = { pipeline: promisify(s.pipeline), finished: promisify(s.finished) };
// node's state getters readable-stream 3 lacks, read from the same state
// node reads them from.
function getters(proto, table) {
  for (const [name, get] of Object.entries(table)) {
    if (!(name in proto)) Object.defineProperty(proto, name, { get, enumerable: false, configurable: true });
  }
}
getters(s.Readable.prototype, {
  readableEnded() { return this._readableState ? this._readableState.endEmitted : false; },
  readableAborted() {
    const st = this._readableState;
    return !!st && !!(st.destroyed || st.errored) && !st.endEmitted;
  },
  readableObjectMode() { return this._readableState ? this._readableState.objectMode : false; },
});
for (const W of [s.Writable, s.Duplex]) {
  getters(W.prototype, {
    writableEnded() { return this._writableState ? this._writableState.ending : false; },
    writableFinished() { return this._writableState ? this._writableState.finished : false; },
    writableObjectMode() { return this._writableState ? this._writableState.objectMode : false; },
    writableCorked() { return this._writableState ? this._writableState.corked : 0; },
    writableNeedDrain() {
      const st = this._writableState;
      return !!st && !st.destroyed && !st.ending && st.needDrain;
    },
  });
}
module.exports = s;

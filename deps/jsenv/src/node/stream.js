// node:stream — stream-browserify (readable-stream 3).
const s = require('stream-browserify');
const { promisify } = require('util');
s.promises = { pipeline: promisify(s.pipeline), finished: promisify(s.finished) };
module.exports = s;

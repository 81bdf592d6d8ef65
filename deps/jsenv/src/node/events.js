// node:events — the browserify events package.
module.exports = require('events');

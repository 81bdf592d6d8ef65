// node:zlib — browserify-zlib (pako): gzip, deflate, inflate and their
// *Sync forms; no brotli.
module.exports = require('browserify-zlib');

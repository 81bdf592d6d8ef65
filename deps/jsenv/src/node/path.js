// node:path — path-browserify (posix only, as on linux).
module.exports = require('path-browserify');

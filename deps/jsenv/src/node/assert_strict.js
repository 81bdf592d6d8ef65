module.exports = require('assert').strict;

module.exports = require('stream').promises;

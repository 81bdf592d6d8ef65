// node:timers — the globals.
module.exports = { setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
  get promises() { return require('timers/promises'); } };

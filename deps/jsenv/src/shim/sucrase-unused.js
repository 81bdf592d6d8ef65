// Stands in for the parts of sucrase's index the environment never uses
// (see build.mjs): its options are ours and constant, so there is nothing
// to validate, and it asks for no source map and no token dump.
exports.__esModule = true;
exports.validateOptions = function validateOptions() {};
exports.default = function unused() {
  throw new Error('code-runner: this part of sucrase is not bundled');
};

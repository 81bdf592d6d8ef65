// node:os — constants of a machine that is not the host's.
const consts = { signals: { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }, errno: {}, priority: {} };
module.exports = {
  EOL: '\n', devNull: '/dev/null', constants: consts,
  platform: () => 'linux', type: () => 'Linux', arch: () => 'x64', release: () => '', version: () => '', machine: () => 'x86_64',
  hostname: () => 'code-runner', homedir: () => '/scratch', tmpdir: () => '/scratch', endianness: () => 'LE',
  cpus: () => [], availableParallelism: () => 1, loadavg: () => [0, 0, 0], uptime: () => 0,
  totalmem: () => 0, freemem: () => 0, networkInterfaces: () => ({}),
  userInfo: () => ({ uid: -1, gid: -1, username: 'tenant', homedir: '/scratch', shell: null }),
};

// Builds dist/page.js (ES module, React and the console module external) and
// copies dist/styles.css. `node build.mjs --check` fails when dist/ differs
// from a fresh build, so the committed dist/ cannot drift from src/.
import { build } from 'esbuild'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'

const external = ['react', 'react-dom', 'react-dom/client', 'react/jsx-runtime', '@iii-dev/console-ui']
const check = process.argv.includes('--check')

const res = await build({
  entryPoints: ['src/page.tsx'],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  external,
  write: false,
  legalComments: 'none',
  charset: 'utf8',
})
const outputs = {
  'dist/page.js': res.outputFiles[0].text,
  'dist/styles.css': readFileSync('src/styles.css', 'utf8'),
}
if (check) {
  const stale = Object.entries(outputs).filter(([p, text]) => {
    try { return readFileSync(p, 'utf8') !== text } catch { return true }
  })
  if (stale.length) {
    console.error(`stale: ${stale.map(([p]) => p).join(', ')} differ from src/; run \`make ui\` and commit dist/`)
    process.exit(1)
  }
  console.log('dist/ is up to date')
} else {
  mkdirSync('dist', { recursive: true })
  for (const [p, text] of Object.entries(outputs)) writeFileSync(p, text)
  console.log(`built ${Object.keys(outputs).join(', ')}`)
}

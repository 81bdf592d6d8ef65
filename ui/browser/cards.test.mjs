// Real-browser test: Debian's Chromium, driven by playwright-core, loads the
// built page.js and styles.css through the harness and checks what a person
// would see. Screenshots of each card land in browser/out/.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { startHarness, RUNTIME_ID } from './harness.mjs'

const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'out')
let harness, browser, context, page

before(async () => {
  mkdirSync(out, { recursive: true })
  harness = await startHarness()
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  context = await browser.newContext({ viewport: { width: 800, height: 1400 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: harness.url })
  page = await context.newPage()
  const errors = []
  page.on('pageerror', (e) => errors.push(e.message))
  await page.goto(harness.url)
  await page.waitForFunction(() => window.__ready === true, null, { timeout: 15000 }).catch((e) => {
    throw new Error(`harness never became ready: ${errors.join('; ') || e.message}`)
  })
})

after(async () => {
  await browser?.close()
  await harness?.close()
})

test('the configuration form honours focusField (deep link)', async () => {
  // The form focuses in an effect, after React commits: wait for it (up to 5 s), then check.
  await page.waitForFunction(() => document.activeElement?.getAttribute('data-field') === 'heap_mb', null, { timeout: 5000 }).catch(() => {})
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-field')), 'heap_mb')
})

test('setup registered the three renderers', async () => {
  assert.deepEqual(await page.evaluate(() => window.__renderers), ['code-runner/page.js#run', 'code-runner/page.js#register_function', 'code-runner/page.js#teardown'])
})

test('cards show the verdict, the value, the source, the streams', async () => {
  const ok = await page.locator('#card-run-ok').innerText()
  assert.match(ok, /exit 0/)
  assert.match(ok, /"answer": 42/)
  assert.match(ok, /keeps the runtime/)
  assert.match(ok, /globalThis\.n = 41/)
  assert.match(ok, /STDOUT\s+hi/i)
  const failed = await page.locator('#card-run-failed').innerText()
  assert.match(failed, /exit 1/)
  assert.match(failed, /returned nothing/)
  assert.match(failed, /assign `result`/)
  assert.match(failed, /ValueError: x/)
  assert.match(await page.locator('#card-register').innerText(), /claims namespace my-app::/)
  assert.match(await page.locator('#card-teardown').innerText(), /2 function ids stopped resolving/)
  assert.match(await page.locator('#card-config').innerText(), /applies immediately/)
})

test('a non-zero exit is drawn as a warning, not an alert', async () => {
  const tone = await page.locator('#card-run-failed .cr-card').evaluate((el) => [...el.classList])
  assert.ok(tone.includes('cr-tone--warn'))
  assert.ok(!tone.includes('cr-tone--alert'))
  const border = await page.locator('#card-run-failed .cr-card').evaluate((el) => getComputedStyle(el).borderLeftColor)
  assert.equal(border, 'rgb(178, 106, 0)') // --color-warn
})

test('no full runtime id anywhere in the DOM', async () => {
  const html = await page.content()
  assert.ok(!/rt-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.test(html.replace(/<script[\s\S]*?<\/script>/g, '')))
  assert.match(await page.locator('#card-run-ok').innerText(), /rt-3f9a…/)
  assert.match(await page.locator('#card-run-error').innerText(), /rt-3f9a…/)
})

test('click-to-copy yields the full id', async () => {
  await page.locator('#card-run-ok .cr-chip--runtime').click()
  await page.waitForFunction(() => document.querySelector('#card-run-ok .cr-chip--runtime').textContent.includes('copied'))
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), RUNTIME_ID)
})

test('the configuration form reports the full next value', async () => {
  await page.locator('[data-field="max_runtimes"]').fill('4')
  const next = await page.evaluate(() => window.__lastConfig)
  assert.equal(next.max_runtimes, 4)
  assert.equal(Object.keys(next).length, 16)
  assert.equal(next.drain_secs, 8)
})

test('screenshots of each card', async () => {
  for (const name of ['run-ok', 'run-failed', 'run-error', 'register', 'teardown', 'config']) {
    const file = path.join(out, `${name}.png`)
    await page.locator(`#card-${name}`).screenshot({ path: file })
  }
})

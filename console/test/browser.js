// The console in a real browser: Debian's Chromium (headless, driven by playwright-core)
// against live `regent dev` brokers filled through the API. One broker runs without
// authentication, one with it (tenant `acme`, tokens of each role); every scenario module
// under browser/ gets each broker it has a function for, one after another, and checks
// its page: no console errors, numbers equal to the API's, actions that really act.
//
// Run: npm run browser-test  (REGENT_BIN defaults to ../target/debug/regent; --vite serves
// the pages from console/src instead of the binary's bundle; --screenshots writes
// docs/dashboard/*.png; CHROMIUM names another browser; ONLY=queues,access runs those).
import * as access from './browser/access.js';
import * as dlq from './browser/dlq.js';
import { fill } from './browser/fill.js';
import * as groups from './browser/groups.js';
import { launch, mint, SECRET, startBroker, tally } from './browser/harness.js';
import * as kv from './browser/kv.js';
import * as messages from './browser/messages.js';
import * as overview from './browser/overview.js';
import * as queue from './browser/queue.js';
import * as queues from './browser/queues.js';
import * as streams from './browser/streams.js';
import * as system from './browser/system.js';
import * as timers from './browser/timers.js';
import * as traces from './browser/traces.js';

const SCENARIOS = {
  overview,
  queues,
  queue,
  messages,
  traces,
  dlq,
  groups,
  streams,
  kv,
  timers,
  system,
  access,
};
const only = process.env.ONLY?.split(',');
const chosen = Object.entries(SCENARIOS).filter(([name]) => !only || only.includes(name));

async function each(kind, ctx) {
  for (const [name, scenario] of chosen) {
    if (!scenario[kind]) continue;
    try {
      await scenario[kind](ctx);
    } catch (e) {
      tally.failed++;
      console.log(`FAIL ${name} (${kind}): ${e.stack || e}`);
    }
  }
}

async function withBroker(env, kind, ctx) {
  if (!chosen.some(([, s]) => s[kind])) return;
  const b = await startBroker(env);
  try {
    await fill(b, ctx.tokens?.admin);
    await each(kind, { ...ctx, b });
  } finally {
    await b.stop();
  }
}

const browser = await launch();
try {
  await withBroker({}, 'anonymous', { browser });
  const tokens = Object.fromEntries(
    ['admin', 'read-write', 'read-only'].map((r) => [r, mint('acme', r)]),
  );
  tokens.other = mint('globex', 'admin');
  await withBroker({ JWT_ENABLED: 'true', JWT_SECRET: SECRET }, 'authenticated', {
    browser,
    tokens,
  });
} catch (e) {
  tally.failed++;
  console.log(`FAIL ${e.stack || e}`);
} finally {
  await browser.close();
}
console.log(`console browser test: ${tally.passed} passed, ${tally.failed} failed`);
process.exit(tally.failed ? 1 : 0);

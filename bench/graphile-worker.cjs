// graphile-worker's consumers for bench/alternatives.sh: one Node.js process running
// graphile-worker's own runner, `concurrency` jobs at a time, each job a no-op (so what is
// measured is the queue, as Regent's consumers ack at once). Producers are pgbench calling
// graphile_worker.add_job / add_jobs, as an application's SQL would.
//
//   node bench/graphile-worker.cjs MODULE_DIR migrate URL
//   node bench/graphile-worker.cjs MODULE_DIR work URL SECONDS CONCURRENCY LOCAL_QUEUE
//
// MODULE_DIR holds node_modules/graphile-worker. `migrate` installs graphile-worker's schema;
// `work` runs jobs for SECONDS, then prints {"done": N}: the jobs completed. LOCAL_QUEUE > 1
// turns on graphile-worker's batching (the pool locks that many jobs per fetch); 0 leaves
// each worker taking one job per fetch, graphile-worker's default.
"use strict";
const path = require("path");

const [moduleDir, mode, url, seconds, concurrency, localQueue] = process.argv.slice(2);
const gw = require(path.join(moduleDir, "node_modules", "graphile-worker"));
const quiet = new gw.Logger(() => () => {});

async function main() {
  if (mode === "migrate") {
    await gw.runMigrations({ connectionString: url, logger: quiet });
    return;
  }
  let done = 0;
  const size = Number(localQueue);
  const runner = await gw.run({
    connectionString: url,
    concurrency: Number(concurrency),
    noHandleSignals: true,
    logger: quiet,
    taskList: {
      job: async () => {
        done++;
      },
    },
    preset: size > 1 ? { worker: { localQueue: { size } } } : {},
  });
  await new Promise((r) => setTimeout(r, Number(seconds) * 1000));
  await runner.stop();
  process.stdout.write(JSON.stringify({ done }) + "\n");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

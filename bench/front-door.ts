/**
 * `bun bench/front-door.ts`: what the front door (client address, rate limit, request log line)
 * costs per request, through app.handle on a static answer (GET /api/v1/openapi.json).
 */
import { createLogger } from "../src/config/log";
import { testSite } from "../test/helpers";

const N = 50_000;
let logged = 0;
const site = await testSite("alpha", { log: createLogger("json", "info", () => logged++) });
const run = async () => {
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    await site.app.handle(new Request("http://localhost/api/v1/openapi.json"));
    if (i % 100 === 0) await Bun.sleep(0); // let the after-response hooks (the log line) run, as a server does
  }
  return (performance.now() - started) / N;
};
await run(); // warm up
const msPerRequest = await run();
console.log(JSON.stringify({ requests: N, microsecondsPerRequest: Math.round(msPerRequest * 1000 * 10) / 10, logLines: logged }));
await site.close();

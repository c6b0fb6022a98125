// `tooltap/vitest/setup` (a vitest setupFiles entry, beside the `tooltap/vitest` globalSetup):
// in each test worker, points the provider variables at the run's tooltap and tags every fetch to
// it with the x-tooltap-cassette header `<test file>::<test name>`, so that replay scopes its
// matching to that test's recordings and names its captures after it; the x-tooltap-exchange
// id of each answer is noted for the global setup, so that a violation names its test; before
// each test, a replaying tooltap starts that test's recordings over (POST /__tooltap/reset).
import { appendFileSync } from "node:fs";
import path from "node:path";
import { beforeEach, expect, inject } from "vitest";
import { CASSETTE_HEADER } from "./server.js";

const tooltap = inject("tooltap");

/** `<file relative to the working directory>::<describe > test>`, printable ASCII only. */
export function cassetteName() {
  const state = expect.getState();
  if (!state.testPath || !state.currentTestName) return undefined;
  const name = `${path.relative(process.cwd(), state.testPath)}::${state.currentTestName}`;
  return name.replace(/[^\x20-\x7e]/g, (c) => encodeURIComponent(c));
}

if (tooltap) {
  Object.assign(process.env, tooltap.env);
  const original = globalThis.fetch;
  globalThis.fetch = function fetchWithCassette(input, init) {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input?.url;
    const name = typeof url === "string" && url.startsWith(tooltap.url) ? cassetteName() : undefined;
    if (name) {
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      if (!headers.has(CASSETTE_HEADER)) headers.set(CASSETTE_HEADER, name);
      init = { ...init, headers };
    }
    const answer = original.call(this, input, init);
    if (!name) return answer;
    return answer.then((response) => {
      const exchange = response.headers.get("x-tooltap-exchange");
      if (exchange && tooltap.exchanges) {
        appendFileSync(tooltap.exchanges, JSON.stringify({ exchange, test: name }) + "\n");
      }
      return response;
    });
  };

  // A test run again (vitest's retry, repeats) gets its recordings from the first again.
  if (tooltap.replay) {
    beforeEach(async () => {
      const name = cassetteName();
      if (!name) return;
      const reset = await original(`${tooltap.url}/__tooltap/reset`, {
        method: "POST",
        headers: { [CASSETTE_HEADER]: name },
      });
      if (!reset.ok) throw new Error(`tooltap: POST /__tooltap/reset answered ${reset.status}: ${await reset.text()}`);
    });
  }
}

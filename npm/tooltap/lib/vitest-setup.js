// `tooltap/vitest/setup` (a vitest setupFiles entry, beside the `tooltap/vitest` globalSetup):
// in each test worker, points the provider variables at the run's tooltap and tags every fetch to
// it with the x-tooltap-cassette header `<test file>::<test name>`, so that replay scopes its
// matching to that test's recordings and names its captures after it; the x-tooltap-exchange
// id of each answer is noted for the global setup, so that a violation names its test; before
// each test, a replaying tooltap starts that test's recordings over (POST /__tooltap/reset).
// After each test, tooltap is asked for the verdicts of the exchanges that test made
// (GET /__tooltap/verdicts, waiting up to VERDICT_WAIT_MS for inspections still running), and a
// violation at or above TOOLTAP_FAIL_ON fails that test, naming the rule.
import { appendFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, expect, inject } from "vitest";
import { CASSETTE_HEADER } from "./server.js";

const tooltap = inject("tooltap");

// How long the verdicts query waits for exchanges still being inspected (tooltap caps it at 30 s);
// the afterEach hook's own timeout is longer.
const VERDICT_WAIT_MS = 10_000;
const VERDICT_HOOK_TIMEOUT_MS = 20_000;

/** `<file relative to the working directory>::<describe > test>`, printable ASCII only. */
export function cassetteName() {
  const state = expect.getState();
  if (!state.testPath || !state.currentTestName) return undefined;
  const name = `${path.relative(process.cwd(), state.testPath)}::${state.currentTestName}`;
  return name.replace(/[^\x20-\x7e]/g, (c) => encodeURIComponent(c));
}

/** The findings of one verdicts answer that fail a test: one line per violation at or above
 * `failOn`, and a count of those not listed (tooltap keeps an exchange's errors first). */
export function failures(answer, failOn) {
  const lines = [];
  for (const verdict of answer?.exchanges ?? []) {
    if (verdict.state !== "judged") continue;
    const failing = (verdict.violations ?? []).filter((v) => failOn.includes(v.severity));
    for (const v of failing) {
      lines.push(`tooltap violation ${v.rule} (${v.severity}) at ${v.path || "/"} in exchange ${verdict.exchange}: ${v.detail}`);
    }
    if (failing.length > 0 && verdict.not_listed > 0) {
      lines.push(`(${verdict.not_listed} more violations in exchange ${verdict.exchange}, not listed)`);
    }
  }
  return lines;
}

if (tooltap) {
  Object.assign(process.env, tooltap.env);
  const original = globalThis.fetch;
  // The exchange ids the running test's requests got (tests of one worker run one at a time).
  let current = null;
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
    const test = current;
    return answer.then((response) => {
      const exchange = response.headers.get("x-tooltap-exchange");
      if (exchange && test) test.exchanges.push(exchange);
      if (exchange && tooltap.exchanges) {
        appendFileSync(tooltap.exchanges, JSON.stringify({ exchange, test: name }) + "\n");
      }
      return response;
    });
  };

  beforeEach(async () => {
    current = { exchanges: [] };
    // A test run again (vitest's retry, repeats) gets its recordings from the first again.
    const name = cassetteName();
    if (!tooltap.replay || !name) return;
    const reset = await original(`${tooltap.url}/__tooltap/reset`, {
      method: "POST",
      headers: { [CASSETTE_HEADER]: name },
    });
    if (!reset.ok) throw new Error(`tooltap: POST /__tooltap/reset answered ${reset.status}: ${await reset.text()}`);
  });

  // A violation fails the test whose exchange broke the contract (vitest fails a test whose
  // afterEach throws); the run's end still lists every finding.
  if (tooltap.verdicts && tooltap.failOn?.length > 0) {
    afterEach(async () => {
      const test = current;
      current = null;
      if (!test || test.exchanges.length === 0) return;
      const query = new URLSearchParams(test.exchanges.map((id) => ["exchange", id]));
      query.set("wait_ms", String(VERDICT_WAIT_MS));
      const reply = await original(`${tooltap.verdicts}?${query}`);
      if (!reply.ok) throw new Error(`tooltap: GET /__tooltap/verdicts answered ${reply.status}: ${await reply.text()}`);
      const answer = await reply.json();
      const pending = answer.exchanges.filter((v) => v.state === "pending").map((v) => v.exchange);
      if (pending.length > 0) {
        console.warn(`tooltap: no verdict yet for exchange(s) ${pending.join(", ")} after ${VERDICT_WAIT_MS} ms; the run's end judges them`);
      }
      const lines = failures(answer, tooltap.failOn);
      if (lines.length > 0) throw new Error(lines.join("\n"));
    }, VERDICT_HOOK_TIMEOUT_MS);
  }
}

// `tooltap/vitest`: a vitest globalSetup that runs one tooltap for the whole run, configured by
// TOOLTAP_MODE (none, once, new_episodes, all, rewrite: pytest-recording's meanings),
// TOOLTAP_RECORDINGS (default tests/recordings), TOOLTAP_UPSTREAM (where recording modes
// forward; default each provider's public API), TOOLTAP_FAIL_ON (error, warning, never) and
// TOOLTAP_FAIL_ON_UNUSED (1: a recording that answered nothing fails the run).
// It points OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL and OLLAMA_HOST at it,
// hands the same to the test files through `provide("tooltap", ...)` (read by
// `tooltap/vitest/setup`), and at the end stops tooltap cleanly and fails the run on a replay miss,
// a violation at or above TOOLTAP_FAIL_ON or an unused recording, naming each.
import { startTooltap, PLACEHOLDER_KEYS } from "./server.js";

export default async function setup(project) {
  const tooltap = await startTooltap();
  const env = { ...tooltap.baseUrls };
  if (!tooltap.recording) {
    for (const key of PLACEHOLDER_KEYS) if (!process.env[key]) env[key] = "tooltap-replay";
  }
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, env);
  const provided = {
    url: tooltap.url,
    env,
    mode: tooltap.mode,
    recordings: tooltap.recordings,
    replay: tooltap.replay,
    exchanges: tooltap.exchanges,
    verdicts: tooltap.verdicts,
    failOn: tooltap.failOn,
  };
  (project?.provide ?? (() => {}))("tooltap", provided);
  return async function teardown() {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    const findings = await tooltap.stop();
    if (findings.length > 0) {
      // vitest reports an error thrown here but keeps the exit status of the tests.
      process.exitCode = 1;
      throw new Error(
        `tooltap (mode ${tooltap.mode}, recordings ${tooltap.recordings}) found ${findings.length} problem(s):\n  ` +
          findings.join("\n  "),
      );
    }
  };
}

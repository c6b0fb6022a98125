// One tooltap (`replay` or `proxy`) on a free loopback port for a test run, in one of
// pytest-recording's modes; stopped with SIGTERM (tooltap's clean end writes every recording and
// violations line first), after which its replay misses and violations are read back.
//
// Modes, for the recordings folder as a whole (per test, replay is scoped by the
// x-tooltap-cassette header that tooltap/vitest/setup adds):
//   none          replay only (`tooltap replay --on-miss error`)
//   once          replay when the folder holds recordings, else record (`tooltap proxy --record all`)
//   new_episodes  replay, forward and record the misses (`replay --on-miss forward` through a
//                 pass-through `tooltap proxy` that routes by provider)
//   all           record every request
//   rewrite       empty the folder, then record
// Every provider's SDK talks to the same tooltap; a path prefix picks the provider (PROVIDERS),
// the same in every mode, so that recorded paths match on replay.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { findTooltapBin } from "./binary.js";

export const MODES = ["none", "once", "new_episodes", "all", "rewrite"];
export const CASSETTE_HEADER = "x-tooltap-cassette";

// [route name, path prefix, public upstream, environment variable, suffix after the tooltap URL].
// The OpenAI SDKs take the default route (no prefix), so OpenAI-compatible servers need none.
export const PROVIDERS = [
  ["", "", "https://api.openai.com", "OPENAI_BASE_URL", "/v1"],
  ["anthropic", "/anthropic", "https://api.anthropic.com", "ANTHROPIC_BASE_URL", "/anthropic"],
  ["gemini", "/gemini", "https://generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL", "/gemini"],
  ["ollama", "/ollama", "http://127.0.0.1:11434", "OLLAMA_HOST", "/ollama"],
];

// SDKs refuse to start without a key, which a replayed test does not need.
export const PLACEHOLDER_KEYS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"];

const READY = new Set(["tooltap proxy ready", "tooltap replay ready"]);
const ADMIN_READY = "admin listener ready";
const MISS_PREFIX = "tooltap replay: no recording ";
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 30_000;

/** Each provider's base-URL variable, pointed at the tooltap listening on `url`. */
export function baseUrls(url) {
  return Object.fromEntries(PROVIDERS.map(([, , , variable, suffix]) => [variable, url + suffix]));
}

function hasRecordings(folder) {
  if (!existsSync(folder)) return false;
  return readdirSync(folder, { recursive: true }).some((name) => String(name).endsWith(".jsonl"));
}

function proxyConfig(upstream) {
  return PROVIDERS.filter(([name]) => name)
    .map(([name, prefix, pub]) => `[[routes]]\nname = "${name}"\nprefix = "${prefix}"\nupstream = "${upstream || pub}"\n`)
    .join("\n");
}

/** The commands to run, the one the SDKs talk to last. */
export function plan({ binary, mode, recordings, upstream, scratch, failOnUnused = false }) {
  if (!MODES.includes(mode)) {
    throw new Error(`tooltap: TOOLTAP_MODE must be one of ${MODES.join(", ")}, not ${JSON.stringify(mode)}`);
  }
  const violations = path.join(scratch, "violations.jsonl");
  const common = ["--listen", "127.0.0.1:0", "--log-format", "json", "--violations", violations];
  if (mode === "rewrite") rmSync(recordings, { recursive: true, force: true });
  const recorded = hasRecordings(recordings);
  if (mode === "none" || (mode === "once" && recorded)) {
    let source = recordings;
    if (!existsSync(source)) {
      source = path.join(scratch, "empty");
      mkdirSync(source, { recursive: true });
    }
    const replay = [binary, "replay", "--recordings", source, "--on-miss", "error", ...common];
    if (recorded && failOnUnused) replay.push("--fail-on-unused");
    return { recording: false, replay: true, commands: [replay] };
  }
  const config = path.join(scratch, "tooltap.toml");
  writeFileSync(config, proxyConfig(upstream));
  const proxy = [binary, "proxy", "--config", config, "--upstream", upstream || PROVIDERS[0][2]];
  mkdirSync(recordings, { recursive: true });
  if (mode === "new_episodes") {
    const router = [...proxy, "--admin-listen", "off", "--listen", "127.0.0.1:0", "--log-format", "json", "--record", "off", "--inspect", "false", "--violations", "off"];
    const replay = [binary, "replay", "--recordings", recordings, "--on-miss", "forward", ...common];
    if (failOnUnused) replay.push("--fail-on-unused");
    return { recording: true, replay: true, commands: [router, replay] };
  }
  // The proxy's admin listener (on a free port) answers /__tooltap/verdicts.
  const record = [...proxy, "--admin-listen", "127.0.0.1:0", "--record", "all", "--recordings", recordings, ...common];
  return { recording: true, replay: false, commands: [record] };
}

function parse(line) {
  if (!line.startsWith("{")) return null;
  try {
    const value = JSON.parse(line);
    return value && typeof value === "object" ? value : null;
  } catch {
    return null;
  }
}

class Child {
  constructor(argv) {
    this.argv = argv;
    const at = argv.indexOf("--violations");
    this.violationsPath = at >= 0 && argv[at + 1] !== "off" ? argv[at + 1] : null;
    this.lines = [];
    this.url = "";
    // The proxy's admin listener, when it runs one (replay answers admin paths on `url`).
    this.adminUrl = "";
    this.exit = null;
    this.process = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    this.exited = new Promise((resolve) => {
      this.process.on("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.process.on("error", (error) => {
        this.lines.push(`cannot run ${argv[0]}: ${error.message}`);
        this.exit = { code: null, signal: null };
        resolve(this.exit);
      });
    });
    this.closed = Promise.all(
      [this.process.stdout, this.process.stderr].map((stream) => {
        const lines = createInterface({ input: stream });
        lines.on("line", (line) => this.take(line));
        return new Promise((resolve) => lines.on("close", resolve));
      }),
    );
  }

  take(line) {
    this.lines.push(line);
    if (this.url) return;
    const fields = parse(line)?.fields;
    if (fields?.message?.startsWith?.(ADMIN_READY) && typeof fields.admin === "string") {
      this.adminUrl = `http://${fields.admin}`;
    }
    if (fields && READY.has(fields.message) && typeof fields.listen === "string") {
      this.url = `http://${fields.listen}`;
      this.onReady?.();
    }
  }

  output() {
    return this.lines.join("\n");
  }

  async ready() {
    if (this.url) return;
    let timer;
    const ready = new Promise((resolve) => {
      this.onReady = resolve;
    });
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, START_TIMEOUT_MS);
    });
    await Promise.race([ready, this.exited, timeout]);
    clearTimeout(timer);
    if (!this.url) {
      this.process.kill("SIGKILL");
      throw new Error(`tooltap did not report ready: ${this.argv.join(" ")}\n${this.output()}`);
    }
  }

  async stop() {
    if (this.exit === null) this.process.kill("SIGTERM");
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(resolve, STOP_TIMEOUT_MS);
    });
    const exit = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (!exit) {
      this.process.kill("SIGKILL");
      return [`tooltap did not stop within ${STOP_TIMEOUT_MS} ms of SIGTERM: ${this.argv.join(" ")}\n${this.output()}`];
    }
    await this.closed;
    const unused = this.unused();
    if (exit.code === 0 || (exit.code === 1 && unused.length > 0)) return unused;
    return [...unused, `tooltap exited with status ${exit.code ?? exit.signal}:\n${this.output()}`];
  }

  /** The recordings replay reported never used at its exit, one line per cassette; only with
   * --fail-on-unused (it logs them as a warning either way). */
  unused() {
    if (!this.argv.includes("--fail-on-unused")) return [];
    return this.lines
      .map((line) => parse(line)?.fields)
      .filter((fields) => fields?.message === "recordings never used")
      .map((fields) => `recordings never used (cassette ${fields.cassette}): ${fields.recordings}`);
  }

  /** The miss messages replay logged; none with --on-miss forward (a miss is then recorded). */
  misses() {
    if (this.argv.includes("forward")) return [];
    return this.lines
      .map((line) => parse(line)?.fields?.message)
      .filter((message) => typeof message === "string" && message.startsWith(MISS_PREFIX));
  }

  violations() {
    if (!this.violationsPath || !existsSync(this.violationsPath)) return [];
    return readFileSync(this.violationsPath, "utf8")
      .split("\n")
      .map(parse)
      .filter((value) => value && typeof value.rule === "string");
  }
}

const FAIL_ON = { error: ["error"], warning: ["error", "warning"], never: [] };

function describe(line, tests) {
  const test = tests.get(line.exchange);
  const where = test ? ` (test ${test})` : "";
  return `tooltap violation ${line.rule} (${line.severity}) at ${line.path || "/"} in exchange ${line.exchange}${where}: ${line.detail}`;
}

// `exchanges.jsonl` in the scratch folder: one `{"exchange", "test"}` line per response the
// setup file's fetch saw (its x-tooltap-exchange header), so a violation names its test.
function testsByExchange(file) {
  if (!existsSync(file)) return new Map();
  return new Map(
    readFileSync(file, "utf8")
      .split("\n")
      .map(parse)
      .filter((value) => value && typeof value.exchange === "string")
      .map((value) => [value.exchange, value.test]),
  );
}

/**
 * Starts tooltap for a run. Options (each defaults to its environment variable): `mode`
 * (TOOLTAP_MODE, default none), `recordings` (TOOLTAP_RECORDINGS, default tests/recordings),
 * `upstream` (TOOLTAP_UPSTREAM), `failOn` (TOOLTAP_FAIL_ON: error, warning or never),
 * `failOnUnused` (TOOLTAP_FAIL_ON_UNUSED=1: a recording that answered nothing is a finding).
 * Resolves to `{ url, verdicts, failOn, baseUrls, mode, recordings, recording, replay, exchanges, stop }`
 * (`verdicts`: the URL of tooltap's `GET /__tooltap/verdicts`; `failOn`: the severities that fail;
 * `exchanges`: the file the setup file appends `{"exchange", "test"}` lines to); `stop()` resolves to the
 * list of findings (misses, violations at or above failOn, an unclean exit), empty when all is well.
 */
export async function startTooltap(options = {}) {
  const env = process.env;
  const mode = options.mode ?? env.TOOLTAP_MODE ?? "none";
  const recordings = path.resolve(options.recordings ?? env.TOOLTAP_RECORDINGS ?? "tests/recordings");
  const upstream = options.upstream ?? env.TOOLTAP_UPSTREAM ?? null;
  const failOn = options.failOn ?? env.TOOLTAP_FAIL_ON ?? "error";
  const failOnUnused = options.failOnUnused ?? !["", "0", undefined].includes(env.TOOLTAP_FAIL_ON_UNUSED);
  if (!(failOn in FAIL_ON)) {
    throw new Error(`tooltap: TOOLTAP_FAIL_ON must be one of ${Object.keys(FAIL_ON).join(", ")}`);
  }
  const binary = options.binary ?? findTooltapBin();
  const scratch = mkdtempSync(path.join(tmpdir(), "tooltap-"));
  const steps = plan({ binary, mode, recordings, upstream, scratch, failOnUnused });
  const exchanges = path.join(scratch, "exchanges.jsonl");
  const children = [];
  const stopAll = async () => {
    const findings = [];
    for (const child of [...children].reverse()) findings.push(...(await child.stop()));
    const tests = testsByExchange(exchanges);
    for (const child of children) {
      findings.push(...child.misses().map((miss) => `replay miss: ${miss}`));
      const failing = child.violations().filter((v) => FAIL_ON[failOn].includes(v.severity));
      findings.push(...failing.map((line) => describe(line, tests)));
    }
    rmSync(scratch, { recursive: true, force: true });
    return findings;
  };
  try {
    let next = null;
    for (const command of steps.commands) {
      const child = new Child(next ? [...command, "--upstream", next] : command);
      children.push(child);
      await child.ready();
      next = child.url;
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  const front = children[children.length - 1];
  const url = front.url;
  let stopped = null;
  return {
    url,
    verdicts: `${front.adminUrl || url}/__tooltap/verdicts`,
    failOn: FAIL_ON[failOn],
    baseUrls: baseUrls(url),
    mode,
    recordings,
    recording: steps.recording,
    replay: steps.replay,
    exchanges,
    stop: () => (stopped ??= stopAll()),
  };
}

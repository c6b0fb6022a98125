#!/usr/bin/env node
// The `tooltap` command: runs the executable from the platform package npm installed beside this
// one (or $TOOLTAP_BIN), with the same arguments, and exits as it did.
import { spawnSync } from "node:child_process";
import { findTooltapBin } from "../lib/binary.js";

let binary;
try {
  binary = findTooltapBin();
} catch (error) {
  console.error(error.message);
  process.exit(1);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  console.error(`tooltap: cannot run ${binary}: ${result.error.message}`);
  process.exit(1);
}
if (result.signal) {
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);

// Where the tooltap executable is: $TOOLTAP_BIN, else the platform package's bin/tooltap.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import path from "node:path";

const require = createRequire(import.meta.url);

/** The platform package that carries the executable for this machine, or null. */
export function platformPackage() {
  if (process.platform === "linux" && process.arch === "x64") {
    const glibc = process.report?.getReport?.().header?.glibcVersionRuntime;
    return glibc ? "tooltap-linux-x64-gnu" : null;
  }
  return null;
}

/** The path of the tooltap executable; throws naming what to install when there is none. */
export function findTooltapBin() {
  if (process.env.TOOLTAP_BIN) {
    return process.env.TOOLTAP_BIN;
  }
  const name = platformPackage();
  if (!name) {
    throw new Error(
      `tooltap: no prebuilt executable for ${process.platform}-${process.arch} ` +
        "(only linux-x64 with glibc is packaged); build it with `cargo build --release` and set TOOLTAP_BIN",
    );
  }
  let root;
  try {
    root = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    throw new Error(
      `tooltap: the package ${name} is not installed (npm leaves out optional dependencies with ` +
        "--omit=optional or --no-optional): reinstall tooltap with optional dependencies, or set TOOLTAP_BIN",
    );
  }
  const binary = path.join(root, "bin", "tooltap");
  if (!existsSync(binary)) {
    throw new Error(`tooltap: ${binary} is missing from ${name}; reinstall it`);
  }
  return binary;
}

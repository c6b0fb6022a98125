// The tooltap npm package: the executable's path and a tooltap started for a test run.
export { findTooltapBin } from "./binary.js";
export { startTooltap, MODES, baseUrls, CASSETTE_HEADER } from "./server.js";

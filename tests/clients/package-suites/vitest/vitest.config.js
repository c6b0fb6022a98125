// The packaged tooltap around the run: tooltap/vitest starts it (TOOLTAP_MODE, TOOLTAP_RECORDINGS,
// TOOLTAP_UPSTREAM), tooltap/vitest/setup points the SDKs at it and names each test's cassette.
export default {
  test: {
    globalSetup: ["tooltap/vitest"],
    setupFiles: ["tooltap/vitest/setup"],
    testTimeout: 20000,
  },
};

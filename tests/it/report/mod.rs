//! `tooltap report` in a real browser: the page is built from recordings (the bundled examples,
//! the engine's fixture corpus turned into recordings, and odd kinds: cut, lossy, upstream
//! errors, binary frames, a recorded `</script>`), loaded by headless Chromium, and the DOM its
//! script produced is asserted on. Chromium is required; without it these tests fail loudly.

mod examples;
mod bounds;
mod kinds;
mod mcp;
mod scale;
pub mod support;

// An ESM load hook for the conformance suite 0.1.16 on Node 20: its bundle imports `globSync`
// from `fs` (Node >= 22) at load time, though only its `tier-check` command calls it. The hook
// drops that one named import from the bundle's source, so every other command runs on Node 20.
export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!url.includes("@modelcontextprotocol/conformance/dist/")) return loaded;
  const source = String(loaded.source);
  return { ...loaded, source: source.replace(/,globSync as [A-Za-z_$][\w$]*/, "") };
}

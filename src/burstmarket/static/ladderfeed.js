// The public ladder as a feed subscriber keeps it (docs/api.md "The feed"): a snapshot, or a
// replay's first update, carries the whole ladder (`rungs`); every other update the rungs new
// or changed since the tick before (`changed`, each whole) and the node counts of those gone
// (`removed`).
function ladderAfter(rungs, data) {
  if (data.rungs) return data.rungs;
  const kept = new Map((rungs || []).map((r) => [r.nodes, r]));
  for (const nodes of data.removed) kept.delete(nodes);
  for (const r of data.changed) kept.set(r.nodes, r);
  return [...kept.values()].sort((a, b) => a.nodes - b.nodes);
}

// A rung's `reason`, a code, in words.
const LADDER_REASONS = { "windows-hold": "protection windows hold these nodes until then" };

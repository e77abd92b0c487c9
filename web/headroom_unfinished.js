// On the first page load after ComfyUI started again: when the previous process ended in the middle of a
// run (the Linux OOM killer, Windows closing the portable's window), a notice says in which stage it
// stopped, how much RAM it had in use and what most likely ended it, with the core's explanation and
// fixes. The server keeps the notice until a page says it was shown, so a reload does not repeat it.
import { gib } from "./headroom_format.js";
import { showOomToast } from "./headroom_oom.js";

const CAUSES = {
  host_ram_exhausted: "system RAM ran out (the OS ended ComfyUI)",
  unknown: "no error was recorded (the window was closed, or the process crashed or was killed)",
};

// The run's figures in one line, each only where the history has it.
export function unfinishedText(run) {
  const u = run?.unfinished;
  if (!u || typeof u !== "object") return null;
  const parts = [];
  const node = u.node && typeof u.node === "object" ? `${u.node.type} #${u.node.id}` : null;
  if (u.stage && u.stage !== "other") parts.push(`stopped in ${u.stage}${node ? ` (${node})` : ""}`);
  else parts.push(node ? `stopped in ${node}` : "stopped before its first node");
  if (Number.isFinite(u.rss_bytes)) parts.push(`ComfyUI had ${gib(u.rss_bytes)} of RAM in use`);
  if (Number.isFinite(u.ram_available_bytes)) {
    const total = Number.isFinite(run.ram_total_bytes) ? ` of ${gib(run.ram_total_bytes)}` : "";
    parts.push(`${gib(u.ram_available_bytes)}${total} system RAM was free`);
  }
  if (Number.isFinite(u.swap_used_bytes) && u.swap_used_bytes > 0) parts.push(`${gib(u.swap_used_bytes)} of swap in use`);
  const cause = CAUSES[u.likely_cause] ?? null;
  return `The last run ${parts.join(", ")}.${cause ? ` Likely cause: ${cause}.` : ""}`;
}

export async function showUnfinishedRun({ app, client, doc = document }) {
  if (typeof client.unfinishedRun !== "function") return null;
  let answer;
  try {
    answer = await client.unfinishedRun();
  } catch {
    return null;  // an older server, or the recorder is off: nothing to report
  }
  const run = answer?.run;
  if (!run) return null;
  const toast = showOomToast({ app, client, result: answer.explanation, fix: null, measured: unfinishedText(run),
    title: "The last run did not finish — Headroom", doc });
  toast.classList.add("headroom-unfinished");
  client.unfinishedSeen().catch(() => {});
  return toast;
}

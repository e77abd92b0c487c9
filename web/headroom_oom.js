// When a run fails with an out-of-memory error: a toast with Headroom's diagnosis and a button that
// applies the suggested fix to the graph. Own DOM, so the button works on every frontend version.
// Whether a failure is a memory failure is the core's answer (`recognised`): under dynamic VRAM most of
// them never say "out of memory" (a VBAR MemoryError, "Fault failed", HostBuffer), so every failed run's
// text goes to the core, and only a recognised one gets a toast.
import { applyPresetResult, nodeName, serializeWorkflow, undoPresetResult } from "./headroom_graph.js";
import { changeText, gib } from "./headroom_format.js";

// The text ComfyUI's execution_error carries, as the Explain node reads it from the history.
export function errorText(detail) {
  const text = [detail?.exception_type, detail?.exception_message].filter(Boolean).join(": ");
  return text || null;
}

// The recorded run of this prompt (GET /headroom/runs, the run recorder's), or null: an older pack, a
// recorder that is off or a run it did not see all leave the toast as it was.
export async function recordedRun(client, promptId) {
  if (!promptId || typeof client.runs !== "function") return null;
  try {
    const answer = await client.runs(20);
    return (answer?.runs ?? []).find((r) => r?.prompt_id === promptId) ?? null;
  } catch {
    return null;
  }
}

// What the recorder measured in that run, in one line: the stage it died in (the last one recorded)
// against its prediction, the card, and the system RAM left, each only where it was measured.
export function measuredText(run) {
  const stages = (run?.stages ?? []).filter((s) => s && typeof s === "object");
  const last = stages[stages.length - 1];
  if (!last) return null;
  const parts = [];
  if (Number.isFinite(last.measured_bytes)) {
    const predicted = Number.isFinite(last.predicted_bytes) ? ` (predicted ${gib(last.predicted_bytes)})` : "";
    parts.push(`${last.name} reached ${gib(last.measured_bytes)} of VRAM${predicted}`);
  }
  const total = run.runtime?.vram_total_bytes;
  if (Number.isFinite(total)) parts.push(`card ${gib(total)}`);
  if (Number.isFinite(last.ram_available_bytes)) parts.push(`${gib(last.ram_available_bytes)} system RAM free`);
  return parts.length ? `Measured in this run: ${parts.join(", ")}.` : null;
}

function diagnosisText(result) {
  const d = result?.diagnosis;
  return (d && typeof d === "object" ? d.text ?? d.id : d) ?? "Not recognised as an out-of-memory message.";
}

// Diagnoses that a smaller workflow answers: the job needs more memory than the card has. Fragmentation,
// another process on the card or system RAM need other levers, so no preset is offered for them.
const SHRINK_DIAGNOSES = new Set(["out_of_memory"]);

function diagnosisId(result) {
  const d = result?.diagnosis;
  return d && typeof d === "object" ? d.id : null;
}

// The card the message is about: its total from the message when it says, else the user's budget.
export function budgetOf(result, getBudget) {
  const total = result?.total_bytes;
  return Number.isSafeInteger(total) && total > 0 ? { vram_bytes: total } : getBudget();
}

// The fix the button applies: a preset the diagnosis names, else (only when the job needs more memory
// than the card has) the preset the core ranks first for this graph on the card of the message
// (api::suggest_preset: the card's own fit if it runs, else the first preset that runs, else the lowest
// peak), in one request. No button for other diagnoses, nor when the core suggests nothing.
export async function suggestedFix({ app, client, result, getBudget }) {
  for (const fix of result?.fixes ?? []) if (fix && typeof fix === "object" && fix.preset) return fix;
  const id = diagnosisId(result);
  if (id !== null && id !== undefined && !SHRINK_DIAGNOSES.has(id)) return null;
  let chosen;
  try {
    chosen = (await client.suggestPreset(serializeWorkflow(app), budgetOf(result, getBudget)))?.chosen;
  } catch {
    return null;
  }
  if (!chosen?.preset) return null;
  return { preset: chosen.preset, title: chosen.preset, text: suggestionText(chosen) };
}

// "does not fit (27.3 GiB) → fits (11.0 GiB)": what the preset does, in the core's verdict words and peaks.
function suggestionText(chosen) {
  const side = (s) => `${s?.verdict ?? "?"}${Number.isFinite(s?.peak_bytes) ? ` (${gib(s.peak_bytes)})` : ""}`;
  return `${side(chosen.before)} → ${side(chosen.after)}`;
}

function fixText(fix) {
  return typeof fix === "string" ? fix : (fix?.text ?? fix?.description ?? fix?.title ?? JSON.stringify(fix));
}

// The button says which preset it applies, in a few words; the fix's sentence (its cost, a launch flag)
// goes in the toast's body, where it can be read.
const LABEL_CHARS = 32;

export function buttonLabel(fix) {
  const name = String(fix?.title ?? fix?.preset ?? "fix");
  return `Apply ${name.length > LABEL_CHARS ? `${name.slice(0, LABEL_CHARS - 1)}…` : name}`;
}

export function showOomToast({ app, client, result, fix, measured = null, getBudget = () => "auto", onApplied, doc = document,
  title: heading = "Out of memory — Headroom" }) {
  doc.querySelector(".headroom-toast")?.remove();
  const toast = doc.createElement("div");
  toast.className = "headroom-toast";
  toast.setAttribute("role", "alert");
  Object.assign(toast.style, {
    position: "fixed", right: "16px", bottom: "16px", maxWidth: "420px", zIndex: 10000,
    background: "#2b1d1d", color: "#fff", border: "1px solid #b04a4a", borderRadius: "6px",
    padding: "10px 12px", font: "13px/1.4 sans-serif", boxShadow: "0 4px 16px rgba(0,0,0,.5)",
    // Fix texts carry long unbroken names (PYTORCH_CUDA_ALLOC_CONF=..., model files): wrap them anywhere.
    overflowWrap: "anywhere", wordBreak: "break-word", boxSizing: "border-box", maxHeight: "60vh", overflowY: "auto",
  });
  const title = doc.createElement("div");
  title.style.fontWeight = "bold";
  title.textContent = heading;
  const diagnosis = doc.createElement("div");
  diagnosis.className = "headroom-diagnosis";
  diagnosis.textContent = diagnosisText(result);
  const fixes = doc.createElement("ol");
  fixes.className = "headroom-fixes";
  for (const fix of (result?.fixes ?? []).slice(0, 3)) {
    const li = doc.createElement("li");
    li.textContent = fixText(fix);
    fixes.appendChild(li);
  }
  const figures = doc.createElement("div");
  figures.className = "headroom-measured";
  figures.textContent = measured ?? "";
  const detail = doc.createElement("div");
  detail.className = "headroom-fix-detail";
  const buttons = doc.createElement("div");
  buttons.style.marginTop = "6px";
  if (fix) {
    const apply = doc.createElement("button");
    apply.className = "headroom-apply-fix";
    apply.textContent = buttonLabel(fix);
    apply.title = fixText(fix);
    if (fixText(fix) !== String(fix.title ?? fix.preset ?? "")) detail.textContent = `${buttonLabel(fix)}: ${fixText(fix)}`;
    apply.addEventListener("click", async () => {
      apply.disabled = true;
      try {
        const res = await client.applyPreset(serializeWorkflow(app), fix.preset, budgetOf(result, getBudget));
        const record = applyPresetResult(app, res);
        onApplied?.(fix.preset, record);
        showApplied(record);
      } catch (err) {
        diagnosis.textContent = `Could not apply the fix: ${err.message}`;
        apply.disabled = false;
      }
    });
    buttons.appendChild(apply);
  }
  const dismiss = doc.createElement("button");
  dismiss.className = "headroom-dismiss";
  dismiss.textContent = "Dismiss";
  dismiss.style.marginLeft = "6px";
  dismiss.addEventListener("click", () => toast.remove());
  buttons.appendChild(dismiss);
  toast.append(title, diagnosis, ...(measured ? [figures] : []), fixes, ...(fix ? [detail] : []), buttons);
  doc.body.appendChild(toast);

  // After Apply: what changed, and an Undo that puts the widgets back.
  function showApplied(record) {
    const changes = record.changes ?? [];
    diagnosis.textContent = changes.length
      ? `Applied ${fix.title ?? fixText(fix)}: ${changes.map((c) => changeText(c, (id) => nodeName(app, id))).join("; ")}. Queue the workflow again.`
      : `${fix.title ?? fixText(fix)} changes nothing in this workflow.`;
    fixes.replaceChildren();
    detail.remove();
    const undo = doc.createElement("button");
    undo.className = "headroom-undo-fix";
    undo.textContent = "Undo";
    undo.addEventListener("click", () => {
      undoPresetResult(app, record);
      onApplied?.(null, []);
      toast.remove();
    });
    buttons.replaceChildren(...(changes.length ? [undo] : []), dismiss);
  }
  return toast;
}

// execution_error listener body: explains what the core recognises as a memory failure, ignores the rest.
export async function handleExecutionError({ app, client, detail, getBudget, onApplied }) {
  const text = errorText(detail);
  if (!text) return null;
  let result;
  try {
    result = await client.explain(text);
  } catch (err) {
    // Without the core nothing says whether this was a memory failure; a toast on every failed run would
    // be wrong for all the others.
    console.warn(`[Headroom] could not explain a failed run: ${err.message}`);
    return null;
  }
  if (!result?.recognised) return null;
  const [fix, run] = await Promise.all([
    suggestedFix({ app, client, result, getBudget: getBudget ?? (() => "auto") }),
    recordedRun(client, detail?.prompt_id),
  ]);
  return showOomToast({ app, client, result, fix, measured: measuredText(run), getBudget, onApplied });
}

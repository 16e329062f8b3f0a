// Usage: the ledger's report (GET usage, as `gantry report usage`):
// GPU-seconds by department, project, user or GPU model over a window, as a
// table with a total row and a bar chart of GPU-seconds.
import { type Obj, call } from "../api";
import { type Ctx, notice } from "../ctx";
import { field, h, mount, table } from "../dom";
import { barChart } from "../chart";

const BY = ["department", "project", "user", "model"];

/** GPU-seconds from milli-GPU-seconds, three decimals, exact. */
function gpuSeconds(milli: number): string {
  return `${Math.floor(milli / 1000)}.${String(milli % 1000).padStart(3, "0")}`;
}

export function usagePage(main: HTMLElement, ctx: Ctx): void {
  const by = h("select", { name: "by" }, BY.map((b) => h("option", { value: b, selected: b === (ctx.params.get("by") ?? "department") }, b)));
  const from = h("input", { name: "from", type: "text", placeholder: "2026-01-01T00:00:00Z", value: ctx.params.get("from") ?? "" });
  const to = h("input", { name: "to", type: "text", placeholder: "now", value: ctx.params.get("to") ?? "" });
  const body = h("div");
  const err = h("div");
  const load = async () => {
    const q = new URLSearchParams({ by: by.value });
    if (from.value.trim()) q.set("from", from.value.trim());
    if (to.value.trim()) q.set("to", to.value.trim());
    try {
      const rep: Obj = await call("GET", `usage?${q}`);
      mount(err);
      const rows: Obj[] = rep.rows ?? [];
      const cells = (name: string, r: Obj) => [
        name,
        gpuSeconds(r.gpuMilliSeconds),
        (r.gpuMilliSeconds / 3.6e6).toFixed(2),
        gpuSeconds(r.utilizedGpuMilliSeconds),
        r.gpuMilliSeconds ? `${Math.round((100 * r.utilizedGpuMilliSeconds) / r.gpuMilliSeconds)}%` : "-",
        String(r.taskRuns),
      ];
      mount(
        body,
        h("p", { class: "muted" }, `From ${rep.from} to ${rep.to}, by ${rep.by}`),
        table("Usage", [rep.by, "GPU-seconds", "GPU-hours", "Utilised GPU-seconds", "Util", "Runs"], [...rows.map((r) => cells(r.name, r)), cells("Total", rep.total)], "usage"),
        barChart(`GPU-seconds by ${rep.by}`, rows.map((r) => ({ name: r.name, value: r.gpuMilliSeconds / 1000 })), "GPU-seconds"),
      );
    } catch (e) {
      notice(err, e);
    }
  };
  mount(
    main,
    h("h1", null, "Usage"),
    h("form", { class: "filters", "aria-label": "Usage report", onsubmit: (e: Event) => { e.preventDefault(); void load(); } },
      field("By", by), field("From", from), field("To", to), h("button", { type: "submit" }, "Show")),
    err,
    body,
  );
  by.addEventListener("change", () => void load());
  void load();
}

// Cluster: every node with its GPU map (index, model, memory, NVLink/PCIe
// group, health, the task holding each GPU and its gpu-milli share), its
// Ready/cordoned state, and free and used GPUs by model. Admins cordon,
// drain and uncordon. The view follows the nodes' and the tasks' watches.
import { ApiError, type Obj, afterChanges, call, get, qty, showQty } from "../api";
import { type Ctx, notice, statusArea } from "../ctx";
import { badge, h, mount, table } from "../dom";

const DRAIN_TAINT = "gantry.dev/drain";

function ready(n: Obj): boolean {
  return (n.status?.conditions ?? []).some((c: Obj) => c.type === "Ready" && c.status === "True");
}

function draining(n: Obj): boolean {
  return (n.spec?.taints ?? []).some((t: Obj) => t.key === DRAIN_TAINT);
}

/** Read-modify-write of a node's spec, retried on a conflict (the agent
 * writes the node every heartbeat), as `gantry cordon|drain|uncordon`. */
async function markNode(name: string, op: "cordon" | "drain" | "uncordon"): Promise<void> {
  for (let i = 0; ; i++) {
    const n = await get(`nodes/${name}`);
    const spec = (n.spec ??= {});
    const taints: Obj[] = (spec.taints ?? []).filter((t: Obj) => t.key !== DRAIN_TAINT);
    if (op === "uncordon") {
      delete spec.unschedulable;
    } else {
      spec.unschedulable = true;
      if (op === "drain") taints.push({ key: DRAIN_TAINT, effect: "NoExecute" });
    }
    if (taints.length) spec.taints = taints;
    else delete spec.taints;
    delete n.status;
    try {
      await call("PUT", `nodes/${name}`, n);
      return;
    } catch (e) {
      if (i >= 8 || !(e instanceof ApiError && e.code === 409)) throw e;
    }
  }
}

function gpuCell(g: Obj, alloc: Obj[]): HTMLElement {
  const holders = alloc.filter((a) => a.index === g.index);
  const milli = holders.reduce((s, a) => s + (a.milli ?? 1000), 0);
  const healthy = g.health === "Healthy";
  const state = !healthy ? "bad" : milli >= 1000 ? "used" : milli > 0 ? "shared" : "free";
  const label = `GPU ${g.index}`;
  return h(
    "li",
    { class: `gpu gpu-${state}`, "data-gpu": g.index, "data-state": state },
    h("span", { class: "gpu-idx" }, label),
    h("span", { class: "gpu-model" }, `${g.model} · ${Math.round((g.memoryBytes ?? 0) / 2 ** 30)} GiB`),
    h("span", { class: "gpu-group" }, `group ${g.group ?? "-"} · NUMA ${g.numaNode ?? "-"}`),
    h("span", { class: "gpu-health" }, healthy ? "Healthy" : g.health ?? "Unknown"),
    holders.length
      ? holders.map((a) => h("span", { class: "gpu-task" }, `${a.task} (${a.milli ?? 1000} milli)`))
      : h("span", { class: "gpu-task" }, "free"),
  );
}

function nodeCard(n: Obj, ctx: Ctx, say: (m: string) => void): HTMLElement {
  const name = n.metadata.name;
  const alloc: Obj[] = n.status?.allocated?.gpus ?? [];
  const cordoned = !!n.spec?.unschedulable;
  const action = (op: "cordon" | "drain" | "uncordon") => async () => {
    try {
      await markNode(name, op);
      say(`Node ${name}: ${op} done.`);
    } catch (e) {
      say(`Node ${name}: ${op} failed: ${e instanceof Error ? e.message : e}`);
    }
  };
  return h(
    "section",
    { class: "card node", "data-node": name, "aria-labelledby": `node-${name}` },
    h(
      "div",
      { class: "card-head" },
      h("h2", { id: `node-${name}` }, name),
      ready(n) ? badge("Ready", "ok") : badge("NotReady", "bad"),
      cordoned ? badge(draining(n) ? "Draining" : "Cordoned", "warn") : null,
      ctx.admin
        ? h(
            "div",
            { class: "actions" },
            cordoned
              ? h("button", { type: "button", onclick: action("uncordon") }, `Uncordon ${name}`)
              : h("button", { type: "button", onclick: action("cordon") }, `Cordon ${name}`),
            draining(n) ? null : h("button", { type: "button", class: "danger", onclick: action("drain") }, `Drain ${name}`),
          )
        : null,
    ),
    h(
      "p",
      { class: "muted" },
      `CPU ${showQty("cpu", qty(n.status?.allocated?.resources?.cpu))} of ${showQty("cpu", qty(n.status?.allocatable?.cpu))} cores · ` +
        `memory ${showQty("memory", qty(n.status?.allocated?.resources?.memory))} of ${showQty("memory", qty(n.status?.allocatable?.memory))}`,
    ),
    h("ul", { class: "gpus", "aria-label": `GPUs of ${name}` }, (n.status?.gpus ?? []).map((g: Obj) => gpuCell(g, alloc))),
  );
}

function byModel(nodes: Obj[]): HTMLElement {
  const rows = new Map<string, { total: number; used: number }>();
  for (const n of nodes) {
    const alloc: Obj[] = n.status?.allocated?.gpus ?? [];
    for (const g of n.status?.gpus ?? []) {
      const r = rows.get(g.model) ?? { total: 0, used: 0 };
      r.total += 1;
      if (alloc.some((a) => a.index === g.index)) r.used += 1;
      rows.set(g.model, r);
    }
  }
  return table(
    "GPUs by model",
    ["Model", "Total", "Used", "Free"],
    [...rows].map(([m, r]) => [m, r.total, r.used, h("span", { "data-free-model": m }, String(r.total - r.used))]),
  );
}

export function clusterPage(main: HTMLElement, ctx: Ctx): void {
  const summary = h("div");
  const list = h("div", { class: "nodes" });
  const status = statusArea();
  const err = h("div");
  mount(main, h("h1", null, "Cluster"), err, status, h("h2", null, "GPUs by model"), summary, h("h2", null, "Nodes"), list);
  const say = (m: string) => mount(status, m);
  let nodes: Obj[] = [];
  const draw = () => {
    mount(summary, byModel(nodes));
    mount(list, nodes.length ? nodes.map((n) => nodeCard(n, ctx, say)) : h("p", null, "No nodes have registered."));
  };
  // A node's allocation is computed from its tasks when it is read, and a
  // watch event carries it as of the event: after a change of either, read
  // the nodes afresh, so an older event never overwrites a newer read.
  const reread = async () => {
    nodes = (await get("nodes")).items ?? [];
    draw();
  };
  ctx.onLeave(afterChanges("nodes", reread, (e) => notice(err, e)));
  ctx.onLeave(afterChanges("tasks", reread, (e) => notice(err, e)));
}

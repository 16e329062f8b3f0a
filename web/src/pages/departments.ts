// Departments: guarantee, limit, used, borrowed and pending demand per
// resource as bars; the largest job that could start now; admins edit the
// quotas (guarantee and limit) in place.
import { GPU, type Obj, RESOURCES, afterChanges, call, get, liveList, qty, showQty } from "../api";
import { type Ctx, notice, statusArea } from "../ctx";
import { field, h, mount } from "../dom";

interface Row {
  res: string;
  guarantee: number;
  limit: number;
  used: number;
  borrowed: number;
  pending: number;
}

function rows(d: Obj, pendingTasks: Obj[]): Row[] {
  const quota = d.spec?.quota ?? {};
  const limit = d.spec?.limit ?? {};
  const st = d.status ?? {};
  return RESOURCES.map((res) => {
    const pending = pendingTasks.reduce((s, t) => {
      const r = t.spec?.template?.resources ?? {};
      return s + qty(r.requests?.[res] ?? r.limits?.[res]);
    }, 0);
    const g = qty(quota[res]);
    return {
      res,
      guarantee: g,
      limit: res in limit ? qty(limit[res]) : g,
      used: qty(st.used?.[res]),
      borrowed: qty(st.borrowed?.[res]),
      pending,
    };
  }).filter((r) => r.guarantee || r.limit || r.used || r.pending);
}

function bar(r: Row): HTMLElement {
  const scale = Math.max(r.limit, r.used + r.pending, r.guarantee, 1e-9);
  const pct = (n: number) => `${Math.min(100, (n / scale) * 100).toFixed(1)}%`;
  const text =
    `${r.res}: used ${showQty(r.res, r.used)} (borrowed ${showQty(r.res, r.borrowed)}), ` +
    `guarantee ${showQty(r.res, r.guarantee)}, limit ${showQty(r.res, r.limit)}, pending ${showQty(r.res, r.pending)}`;
  return h(
    "div",
    { class: "quota-row", "data-res": r.res },
    h("div", { class: "quota-label" }, h("strong", null, r.res), h("span", { class: "muted" }, text.slice(r.res.length + 2))),
    h(
      "div",
      { class: "bar", role: "img", "aria-label": text },
      h("span", { class: "bar-used", style: `width:${pct(r.used - r.borrowed)}` }),
      h("span", { class: "bar-borrowed", style: `width:${pct(r.borrowed)}` }),
      h("span", { class: "bar-pending", style: `width:${pct(r.pending)}` }),
      h("span", { class: "bar-guarantee", style: `left:${pct(r.guarantee)}` }),
    ),
  );
}

/** The most GPUs one job could get now: the department's headroom under
 * its limit, and what the nodes have free (in all, and on one node). */
function largestJob(rs: Row[], nodes: Obj[]): string {
  const gpu = rs.find((r) => r.res === GPU);
  const headroom = gpu ? Math.max(0, gpu.limit - gpu.used) : 0;
  let free = 0;
  let freeOne = 0;
  for (const n of nodes) {
    if (n.spec?.unschedulable) continue;
    const taken = new Set((n.status?.allocated?.gpus ?? []).map((a: Obj) => a.index));
    const f = (n.status?.gpus ?? []).filter((g: Obj) => g.health === "Healthy" && !taken.has(g.index)).length;
    free += f;
    freeOne = Math.max(freeOne, f);
  }
  const all = Math.floor(Math.min(headroom, free));
  const one = Math.floor(Math.min(headroom, freeOne));
  return `${all} GPUs now (${one} on one node)`;
}

function editForm(d: Obj, say: (m: string) => void): HTMLElement {
  const inputs: Record<string, [HTMLInputElement, HTMLInputElement]> = {};
  const name = d.metadata.name;
  const grid = RESOURCES.map((res) => {
    const g = h("input", { name: `${res}-quota`, value: String(d.spec?.quota?.[res] ?? ""), inputmode: "text" });
    const l = h("input", { name: `${res}-limit`, value: String(d.spec?.limit?.[res] ?? ""), inputmode: "text" });
    inputs[res] = [g, l];
    return h("div", { class: "quota-edit" }, field(`${res} guarantee`, g), field(`${res} limit`, l));
  });
  const form = h(
    "form",
    { class: "edit", "aria-label": `Edit quota of ${name}` },
    grid,
    h("button", { type: "submit", class: "primary" }, `Save quota of ${name}`),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const cur = await get(`departments/${name}`);
    const quota: Obj = {};
    const limit: Obj = {};
    for (const [res, [g, l]] of Object.entries(inputs)) {
      const conv = (v: string) => (res === GPU && /^\d+$/.test(v) ? Number(v) : v);
      if (g.value.trim()) quota[res] = conv(g.value.trim());
      if (l.value.trim()) limit[res] = conv(l.value.trim());
    }
    cur.spec = { ...cur.spec, quota, limit };
    delete cur.status;
    try {
      await call("PUT", `departments/${name}`, cur);
      say(`Quota of ${name} saved.`);
    } catch (e) {
      say(`Quota of ${name} not saved: ${e instanceof Error ? e.message : e}`);
    }
  });
  return h("details", null, h("summary", null, `Edit quota of ${name}`), form);
}

export function departmentsPage(main: HTMLElement, ctx: Ctx): void {
  const list = h("div", { class: "cards" });
  const status = statusArea();
  const err = h("div");
  mount(main, h("h1", null, "Departments"), err, status, list);
  const say = (m: string) => mount(status, m);
  // each edit form is made once and moved into every redraw, so an open
  // form keeps what the user typed while the figures change around it
  const forms = new Map<string, HTMLElement>();
  const formOf = (d: Obj) => {
    let f = forms.get(d.metadata.name);
    if (!f) forms.set(d.metadata.name, (f = editForm(d, say)));
    return f;
  };
  let depts: Obj[] = [];
  let tasks: Obj[] = [];
  let nodes: Obj[] = [];
  const draw = () =>
    mount(
      list,
      depts.length
        ? depts.map((d) => {
            const pending = tasks.filter((t) => t.spec?.department === d.metadata.name && (t.status?.phase ?? "Pending") === "Pending");
            const rs = rows(d, pending);
            return h(
              "section",
              { class: "card", "data-department": d.metadata.name, "aria-labelledby": `dept-${d.metadata.name}` },
              h("h2", { id: `dept-${d.metadata.name}` }, d.metadata.name),
              h("p", null, h("strong", null, "Largest job that could start now: "), h("span", { class: "largest" }, largestJob(rs, nodes))),
              rs.length ? rs.map(bar) : h("p", { class: "muted" }, "No quota."),
              h("p", { class: "muted" }, `Admins: ${(d.spec?.admins ?? []).join(", ") || "none"}`),
              ctx.admin ? formOf(d) : null,
            );
          })
        : h("p", null, "No departments you may see."),
    );
  const fail = (e: unknown) => notice(err, e);
  ctx.onLeave(liveList("departments", "", (items) => { depts = items; draw(); }, fail));
  // used and borrowed are computed from the tasks: read them again when tasks change
  ctx.onLeave(
    afterChanges("tasks", async (items) => {
      tasks = items;
      draw();
      depts = (await get("departments")).items ?? [];
      draw();
    }, fail),
  );
  ctx.onLeave(liveList("nodes", "", (items) => { nodes = items; draw(); }, () => {}));
}

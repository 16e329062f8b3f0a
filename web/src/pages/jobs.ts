// Jobs: a list filtered by project (the path), label (labelSelector),
// state and text, sorted, in pages (the API's limit/continue), so 10,000
// jobs cost one page. State and text are matched here: without them a page
// is one API page of PAGE jobs; with them pages of SCAN jobs are read and
// filtered until PAGE match.
import { type Obj, get, jobState, reasonAttrs, waitReason } from "../api";
import { type Ctx, notice } from "../ctx";
import { age, badge, field, h, mount, table } from "../dom";

const PAGE = 50;
const SCAN = 500;
const STATES = ["", "Created", "Queued", "Running", "Restarting", "Succeeded", "Failed", "Suspended"];

export function stateBadge(s: string): HTMLElement {
  const kind = s === "Succeeded" ? "ok" : s === "Failed" ? "bad" : s === "Running" ? "info" : "warn";
  return badge(s, kind);
}

interface Filter {
  project: string;
  label: string;
  state: string;
  q: string;
  sort: string;
}

/** One page of jobs from token (the API's continue; "" the first): the
 * jobs, the token of the next page ("" none) and how many remain. */
async function fetchPage(f: Filter, token: string): Promise<{ items: Obj[]; next: string; remaining: number }> {
  const base = f.project ? `projects/${encodeURIComponent(f.project)}/jobs` : "jobs";
  const filtering = !!(f.state || f.q);
  const items: Obj[] = [];
  let next = token;
  let remaining = 0;
  for (;;) {
    const q = new URLSearchParams({ limit: String(filtering ? SCAN : PAGE) });
    if (f.label) q.set("labelSelector", f.label);
    if (next) q.set("continue", next);
    const list = await get(`${base}?${q}`);
    let got: Obj[] = list.items ?? [];
    next = list.metadata?.continue ?? "";
    remaining = list.metadata?.remainingItemCount ?? 0;
    if (!filtering) return { items: got, next, remaining };
    got = got.filter((j) => (!f.state || jobState(j) === f.state) && (!f.q || JSON.stringify([j.metadata, j.spec]).toLowerCase().includes(f.q.toLowerCase())));
    for (const j of got) {
      if (items.length === PAGE) {
        // the next page resumes after the last job given (the API's token)
        const last = items[PAGE - 1].metadata;
        return { items, next: f.project ? last.name : `${last.project}/${last.name}`, remaining: -1 };
      }
      items.push(j);
    }
    if (!next || items.length === PAGE) return { items, next, remaining: -1 };
  }
}

function sortJobs(items: Obj[], how: string): Obj[] {
  const by: Record<string, (a: Obj, b: Obj) => number> = {
    newest: (a, b) => (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""),
    oldest: (a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""),
    state: (a, b) => jobState(a).localeCompare(jobState(b)),
  };
  return by[how] ? [...items].sort(by[how]) : items;
}

// the continue tokens of the pages before the current one, per filter
const back = new Map<string, string[]>();

export async function jobsPage(main: HTMLElement, ctx: Ctx): Promise<void> {
  const p = ctx.params;
  const f: Filter = {
    project: p.get("project") ?? "",
    label: p.get("label") ?? "",
    state: p.get("state") ?? "",
    q: p.get("q") ?? "",
    sort: p.get("sort") ?? "name",
  };
  const token = p.get("continue") ?? "";
  const fkey = JSON.stringify(f);
  const project = h("select", { name: "project" }, h("option", { value: "" }, "All projects"), ctx.projects.map((x) => h("option", { value: x.metadata.name, selected: x.metadata.name === f.project }, x.metadata.name)));
  const label = h("input", { name: "label", value: f.label, placeholder: "team=vision", autocomplete: "off" });
  const state = h("select", { name: "state" }, STATES.map((s) => h("option", { value: s, selected: s === f.state }, s || "Any state")));
  const q = h("input", { name: "q", type: "search", value: f.q, autocomplete: "off" });
  const sort = h("select", { name: "sort" }, [["name", "Project and name"], ["newest", "Newest first"], ["oldest", "Oldest first"], ["state", "State"]].map(([v, t]) => h("option", { value: v, selected: v === f.sort }, t)));
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter jobs" },
    field("Project", project),
    field("Label selector", label),
    field("State", state),
    field("Text", q),
    field("Sort", sort),
    h("button", { type: "submit" }, "Apply"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const np = new URLSearchParams();
    for (const [k, el] of Object.entries({ project, label, state, q, sort })) if (el.value && !(k === "sort" && el.value === "name")) np.set(k, el.value);
    location.hash = `#/jobs?${np}`;
  });
  const body = h("div", { "aria-busy": "true" }, "Loading…");
  const err = h("div");
  mount(main, h("h1", null, "Jobs"), form, err, body);
  try {
    const started = performance.now();
    const page = await fetchPage(f, token);
    const stack = back.get(fkey) ?? [];
    const idx = token ? stack.indexOf(token) : -1;
    const offset = token ? (idx >= 0 ? idx + 1 : stack.length + 1) * PAGE : 0;
    const rows = sortJobs(page.items, f.sort).map((j) => [
      h("a", { href: `#/job/${j.metadata.project}/${j.metadata.name}` }, j.metadata.name),
      j.metadata.project,
      stateBadge(jobState(j)),
      age(j.metadata.creationTimestamp),
      Object.entries(j.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(", "),
      h("span", reasonAttrs(j), jobState(j) === "Queued" ? waitReason(j) : ""),
    ]);
    const go = (t: string) => {
      const np = new URLSearchParams(p);
      if (t) np.set("continue", t);
      else np.delete("continue");
      location.hash = `#/jobs?${np}`;
    };
    const nav = h(
      "nav",
      { class: "pager", "aria-label": "Pages of jobs" },
      h("button", {
        type: "button",
        disabled: !token,
        onclick: () => {
          const i = stack.indexOf(token);
          go(i > 0 ? stack[i - 1] : "");
        },
      }, "Previous page"),
      h("span", { class: "range", "data-ms": Math.round(performance.now() - started) },
        page.items.length ? `Jobs ${offset + 1}–${offset + page.items.length}` : "No jobs",
        page.remaining >= 0 ? ` of ${offset + page.items.length + page.remaining}` : ""),
      h("button", {
        type: "button",
        disabled: !page.next,
        onclick: () => {
          if (!stack.includes(page.next)) stack.push(page.next);
          back.set(fkey, stack);
          go(page.next);
        },
      }, "Next page"),
    );
    mount(body, table("Jobs", ["Name", "Project", "State", "Age", "Labels", "Why it waits"], rows, "jobs"), nav);
    body.setAttribute("aria-busy", "false");
  } catch (e) {
    mount(body);
    notice(err, e);
  }
}

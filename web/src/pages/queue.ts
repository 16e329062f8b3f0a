// Queue: the pending jobs in the order the scheduler considers them
// (DESIGN.md "Scheduling", step 1: priority value, then the department's
// dominant share used/guarantee, then arrival), each with the reason it
// waits (its Queued condition), its priority, department and age.
import { type Obj, RESOURCES, get, jobState, liveList, qty, reasonAttrs, waitReason } from "../api";
import { type Ctx, notice } from "../ctx";
import { age, h, mount, table } from "../dom";

export function priorityOf(j: Obj, classes: Obj[]): number {
  const name = j.spec?.runPolicy?.schedulingPolicy?.priorityClass;
  const pc = name ? classes.find((c) => c.metadata.name === name) : classes.find((c) => c.globalDefault);
  return pc?.value ?? 0;
}

function dominantShare(dept: Obj | undefined): number {
  if (!dept) return 0;
  let share = 0;
  for (const res of RESOURCES) {
    const g = qty(dept.spec?.quota?.[res]);
    const u = qty(dept.status?.used?.[res]);
    if (g > 0) share = Math.max(share, u / g);
    else if (u > 0) share = Math.max(share, Infinity);
  }
  return share;
}

export function queuePage(main: HTMLElement, ctx: Ctx): void {
  const body = h("div");
  const err = h("div");
  mount(
    main,
    h("h1", null, "Queue"),
    h("p", { class: "muted" }, "Pending jobs in the order the scheduler considers them: priority, then the department's share of its guarantee, then arrival."),
    err,
    body,
  );
  let classes: Obj[] = [];
  let depts: Obj[] = ctx.departments;
  void get("priorityclasses").then((l) => (classes = l.items ?? []), () => {});
  const deptOf = (j: Obj) => ctx.projects.find((p) => p.metadata.name === j.metadata.project)?.spec?.department ?? "";
  const draw = (jobs: Obj[]) => {
    const pending = jobs.filter((j) => ["Created", "Queued"].includes(jobState(j)));
    const keyed = pending.map((j) => ({
      j,
      prio: priorityOf(j, classes),
      share: dominantShare(depts.find((d) => d.metadata.name === deptOf(j))),
      t: Date.parse(j.metadata.creationTimestamp ?? "") || 0,
    }));
    keyed.sort((a, b) => b.prio - a.prio || a.share - b.share || a.t - b.t);
    mount(
      body,
      table(
        "Pending jobs",
        ["#", "Job", "Department", "Priority", "Age", "Why it waits"],
        keyed.map(({ j, prio }, i) => [
          String(i + 1),
          h("a", { href: `#/job/${j.metadata.project}/${j.metadata.name}` }, `${j.metadata.project}/${j.metadata.name}`),
          deptOf(j) || "-",
          String(prio),
          age(j.metadata.creationTimestamp),
          h("span", reasonAttrs(j), waitReason(j) || "waiting for the next scheduling cycle"),
        ]),
        "queue",
      ),
    );
  };
  ctx.onLeave(
    liveList("jobs", "", (jobs) => {
      draw(jobs);
      void get("departments").then((l) => { depts = l.items ?? []; draw(jobs); }, () => {});
    }, (e) => notice(err, e)),
  );
}

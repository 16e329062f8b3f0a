// Events: the live stream of what happened to which object and why,
// filterable by object (kind/name text) and reason, newest first.
import { type Obj, liveList } from "../api";
import { type Ctx, notice } from "../ctx";
import { age, field, h, mount, table } from "../dom";

export function eventsPage(main: HTMLElement, ctx: Ctx): void {
  const object = h("input", { name: "object", type: "search", value: ctx.params.get("object") ?? "", autocomplete: "off", placeholder: "Job/train or a name" });
  const reason = h("select", { name: "reason" }, h("option", { value: "" }, "Any reason"));
  const body = h("div");
  const err = h("div");
  const count = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  mount(
    main,
    h("h1", null, "Events"),
    h("form", { class: "filters", role: "search", "aria-label": "Filter events", onsubmit: (e: Event) => e.preventDefault() }, field("Object", object), field("Reason", reason)),
    err,
    count,
    body,
  );
  let events: Obj[] = [];
  const draw = () => {
    const reasons = [...new Set(events.map((e) => e.reason ?? ""))].filter(Boolean).sort();
    const cur = reason.value || ctx.params.get("reason") || "";
    mount(reason, h("option", { value: "" }, "Any reason"), reasons.map((r) => h("option", { value: r, selected: r === cur }, r)));
    const o = object.value.trim().toLowerCase();
    const shown = events
      .filter((e) => {
        const io = e.involvedObject ?? {};
        const name = `${io.kind}/${io.project ? `${io.project}/` : ""}${io.name}`.toLowerCase();
        return (!o || name.includes(o)) && (!cur || e.reason === cur);
      })
      .sort((a, b) => (b.lastTimestamp ?? "").localeCompare(a.lastTimestamp ?? ""));
    mount(count, `${shown.length} of ${events.length} events`);
    mount(
      body,
      table(
        "Events",
        ["Last seen", "Type", "Reason", "Object", "Count", "Message"],
        shown.map((e) => {
          const io = e.involvedObject ?? {};
          const link = io.kind === "Job" && io.project ? h("a", { href: `#/job/${io.project}/${io.name}` }, `Job/${io.project}/${io.name}`) : `${io.kind}/${io.project ? `${io.project}/` : ""}${io.name}`;
          return [age(e.lastTimestamp), e.type ?? "", e.reason ?? "", link, String(e.count ?? 1), e.message ?? ""];
        }),
        "events",
      ),
    );
  };
  object.addEventListener("input", draw);
  reason.addEventListener("change", draw);
  ctx.onLeave(liveList("events", "", (items) => { events = items; draw(); }, (e) => notice(err, e)));
}

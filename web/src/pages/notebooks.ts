// Notebooks: every notebook the user may read, live, with its phase, the
// idle clock (time since its last activity, and its culling timeout when
// set), and Open (through gantryd's proxy: the first visit carries the
// user's own token, which the proxy turns into a cookie), Stop and Start
// (spec.stopped) for those who may write to its project; and a form for a
// new one (docs/api.md "Notebooks").
import { type Obj, ApiError, GPU, call, get, getToken, liveList } from "../api";
import { type Ctx, canWrite, notice, statusArea } from "../ctx";
import { age, badge, field, h, mount, table } from "../dom";

function phaseBadge(p: string): HTMLElement {
  const kind = p === "Running" ? "ok" : p === "Failed" ? "bad" : p === "Culled" || p === "Stopped" ? "info" : "warn";
  return badge(p || "Pending", kind);
}

/** "idle 3m of 60m" from lastActivityTime and spec.idle. */
export function idleClock(nb: Obj, now = Date.now()): string {
  if (nb.status?.phase !== "Running") return "-";
  const since = nb.status?.lastActivityTime;
  const idle = nb.spec?.idle ?? {};
  if (!since) return idle.enabled ? "culling on" : "culling off";
  const limit = idle.enabled && idle.timeoutSeconds ? ` of ${age(new Date(now - idle.timeoutSeconds * 1000).toISOString(), now)}` : "";
  return `idle ${age(since, now)}${limit}${idle.enabled ? "" : " (culling off)"}`;
}

async function setStopped(nb: Obj, stopped: boolean): Promise<void> {
  const path = `projects/${nb.metadata.project}/notebooks/${nb.metadata.name}`;
  for (let i = 0; i < 8; i++) {
    const cur = await get(path);
    cur.spec = { ...(cur.spec ?? {}), stopped };
    try {
      await call("PUT", path, cur);
      return;
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 409)) throw e;
    }
  }
}

function newForm(ctx: Ctx, status: HTMLElement): HTMLElement {
  const writable = ctx.projects.filter((p) => canWrite(ctx, p.metadata.name));
  const project = h("select", { name: "project", required: true }, writable.map((p) => h("option", { value: p.metadata.name }, p.metadata.name)));
  const name = h("input", { name: "name", required: true, pattern: "[a-z0-9]([-a-z0-9]*[a-z0-9])?", maxlength: 51, autocomplete: "off" });
  const gpus = h("input", { name: "gpus", type: "number", min: 0, max: 64, value: "1" });
  const home = h("input", { name: "home", autocomplete: "off", placeholder: "my-home" });
  const image = h("input", { name: "image", autocomplete: "off" });
  const form = h(
    "form",
    { class: "new-notebook", "aria-labelledby": "new-notebook-title" },
    h("h2", { id: "new-notebook-title" }, "New notebook"),
    field("Project", project),
    field("Name", name, "lower-case letters, digits and '-'"),
    field("GPUs", gpus),
    field("Home volume", home, "a Volume of the project (or a directory beneath a storage root), kept across stops"),
    field("Image", image, "empty: the node's Jupyter"),
    h("button", { type: "submit", class: "primary" }, "Create notebook"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const tmpl: Obj = { resources: { limits: { [GPU]: Number(gpus.value || 0), cpu: "1", memory: "2Gi" } } };
    if (image.value.trim()) tmpl.image = image.value.trim();
    const spec: Obj = { template: tmpl };
    const homeValue = home.value.trim();
    if (homeValue) spec.home = homeValue.startsWith("/") ? { hostPath: homeValue } : { volume: homeValue };
    try {
      await call("POST", `projects/${project.value}/notebooks`, {
        apiVersion: "gantry.dev/v1", kind: "Notebook", metadata: { name: name.value, project: project.value }, spec,
      });
      mount(status, `Notebook ${project.value}/${name.value} created.`);
      name.value = "";
    } catch (e) {
      notice(status, e);
    }
  });
  return writable.length ? form : h("p", { class: "muted" }, "You may not create notebooks in any project.");
}

export function notebooksPage(main: HTMLElement, ctx: Ctx): void {
  const body = h("div", { "aria-busy": "true" }, "Loading…");
  const err = h("div");
  const status = statusArea();
  mount(
    main,
    h("h1", null, "Notebooks"),
    h("p", { class: "muted" }, "Jupyter with GPUs, opened through gantry. Idle notebooks with GPUs are stopped (culled); their home volume stays."),
    err,
    status,
    body,
    newForm(ctx, status),
  );
  const act = (nb: Obj, stopped: boolean) => async () => {
    try {
      await setStopped(nb, stopped);
      mount(status, `${stopped ? "Stopping" : "Starting"} ${nb.metadata.name}.`);
    } catch (e) {
      notice(status, e);
    }
  };
  let items: Obj[] = [];
  const draw = () => {
    const rows = items.map((nb) => {
      const p = nb.metadata.project;
      const phase = nb.status?.phase ?? "Pending";
      const w = canWrite(ctx, p);
      const open = nb.status?.url && phase === "Running" && w
        ? h("a", { href: `${nb.status.url}?gantry-token=${encodeURIComponent(getToken() ?? "")}`, target: "_blank", rel: "noopener", class: "button", "aria-label": `Open ${nb.metadata.name}` }, "Open")
        : null;
      const stop = w && !nb.spec?.stopped ? h("button", { type: "button", onclick: act(nb, true), "aria-label": `Stop ${nb.metadata.name}` }, "Stop") : null;
      const start = w && nb.spec?.stopped ? h("button", { type: "button", onclick: act(nb, false), "aria-label": `Start ${nb.metadata.name}` }, "Start") : null;
      return [nb.metadata.name, p, phaseBadge(phase), h("span", { class: "idle" }, idleClock(nb)), nb.status?.lastActivity ?? "-", h("span", { class: "actions" }, open, stop, start)];
    });
    mount(body, table("Notebooks", ["Name", "Project", "Phase", "Idle", "Last activity", "Actions"], rows, "notebooks"));
    body.setAttribute("aria-busy", "false");
  };
  ctx.onLeave(liveList("notebooks", "", (list) => { items = list; draw(); }, (e) => notice(err, e)));
  const clock = setInterval(draw, 5000);
  ctx.onLeave(() => clearInterval(clock));
}

// One job: its conditions as a timeline, restart and requeue counts, its
// tasks with node and GPUs, the live log of any task (follow, previous
// run, download) and its Events; actions: stop (delete), resubmit (the
// form filled in) and download the manifest. Job, tasks and Events follow
// their watch streams. Its training curves (spec.tensorboard scalars) and
// utilisation history are polled every two seconds.
import { type Obj, ApiError, call, getText, jobState, liveList, stream } from "../api";
import { lineChart } from "../chart";
import { type Ctx, canWrite, notice, statusArea } from "../ctx";
import { age, download, field, h, mount, table } from "../dom";
import { stateBadge } from "./jobs";

/** The manifest a user would apply: the job without server-owned fields. */
export function manifestOf(j: Obj): Obj {
  const md = { ...j.metadata };
  for (const k of ["uid", "resourceVersion", "creationTimestamp", "creator", "deletionTimestamp", "generation"]) delete md[k];
  return { apiVersion: j.apiVersion, kind: j.kind, metadata: md, spec: j.spec };
}

function timeline(j: Obj): HTMLElement {
  const conds: Obj[] = [...(j.status?.conditions ?? [])].sort((a, b) =>
    (a.lastTransitionTime ?? "").localeCompare(b.lastTransitionTime ?? ""),
  );
  return h(
    "ol",
    { class: "timeline", "aria-label": "Conditions" },
    conds.map((c) =>
      h(
        "li",
        { class: c.status === "True" ? "on" : "off", "data-condition": c.type },
        h("strong", null, c.type),
        ` ${c.status === "True" ? "" : "(no longer) "}· ${c.reason ?? ""} · `,
        h("time", { datetime: c.lastTransitionTime ?? "" }, c.lastTransitionTime ?? ""),
        c.message ? h("div", { class: "muted" }, c.message) : null,
      ),
    ),
  );
}

function gpusOf(t: Obj): string {
  const g: Obj[] = t.spec?.gpus ?? [];
  return g.length ? g.map((x) => (x.milli && x.milli < 1000 ? `#${x.index} (${x.milli} milli)` : `#${x.index}`)).join(", ") : "-";
}

const POLL_MS = 2000;

/** The job's training curves: one chart per tag, value over step. */
function drawScalars(el: HTMLElement, sc: Obj): void {
  const tags: Obj[] = sc.tags ?? [];
  mount(
    el,
    tags.length
      ? tags.map((t) => lineChart(t.tag, [{ name: t.tag, xs: t.steps, ys: t.values }]))
      : h("p", { class: "muted" }, "No scalars reported (set spec.tensorboard.logDir and write TensorBoard event files there)."),
  );
}

/** The job's utilisation history (10 s buckets): GPU % and CPU cores. */
function drawHistory(el: HTMLElement, hi: Obj): void {
  const xs: number[] = hi.times ?? [];
  const clock = (x: number) => new Date(x * 1000).toISOString().slice(11, 19);
  const cur = hi.current;
  mount(
    el,
    cur
      ? h("p", { "data-current": "" }, `Now: ${cur.tasks} task(s), GPU ${Math.round(cur.gpuUtil)}%, CPU ${(cur.cpuMilli / 1000).toFixed(2)} cores, memory ${(cur.memoryBytes / 2 ** 20).toFixed(0)} MiB, GPU memory ${(cur.gpuMemoryBytes / 2 ** 20).toFixed(0)} MiB`)
      : null,
    xs.length
      ? [
          lineChart("GPU utilisation (%)", [{ name: "GPU %", xs, ys: hi.gpuUtil }], clock),
          lineChart("CPU (cores) and memory (GiB)", [
            { name: "CPU", xs, ys: (hi.cpuMilli as number[]).map((v) => v / 1000) },
            { name: "memory GiB", xs, ys: (hi.memoryBytes as number[]).map((v) => v / 2 ** 30) },
          ], clock),
        ]
      : h("p", { class: "muted" }, "No utilisation samples yet."),
  );
}

export function jobPage(main: HTMLElement, ctx: Ctx): void {
  const [project, name] = ctx.path;
  const writable = canWrite(ctx, project);
  const head = h("div", { class: "card-head" });
  const summary = h("div");
  const tasksEl = h("div");
  const eventsEl = h("div");
  const scalarsEl = h("div", { "data-scalars": "" });
  const historyEl = h("div", { "data-history": "" });
  const status = statusArea();
  const err = h("div");
  const logBox = h("pre", { class: "log", role: "log", tabindex: "0", "aria-label": "Task log" });
  const taskSel = h("select", { name: "task" });
  const follow = h("input", { type: "checkbox", name: "follow", checked: true });
  const previous = h("input", { type: "checkbox", name: "previous" });
  const logCtl = { abort: () => {} };
  let job: Obj | null = null;
  let tasks: Obj[] = [];
  let shownTask = "";

  const logPath = () => {
    const q = new URLSearchParams();
    if (follow.checked && !previous.checked) q.set("follow", "true");
    if (previous.checked) q.set("previous", "true");
    return `projects/${project}/tasks/${taskSel.value}/log?${q}`;
  };
  const showLog = async () => {
    logCtl.abort();
    const ctl = new AbortController();
    logCtl.abort = () => ctl.abort();
    shownTask = taskSel.value;
    mount(logBox);
    if (!taskSel.value) return;
    try {
      await stream(logPath(), (t) => {
        logBox.append(t);
        logBox.scrollTop = logBox.scrollHeight;
      }, ctl.signal);
    } catch (e) {
      if (!ctl.signal.aborted) logBox.append(`\n[${e instanceof Error ? e.message : e}]\n`);
    }
  };
  ctx.onLeave(() => logCtl.abort());
  const logForm = h(
    "form",
    { class: "inline", "aria-label": "Task log" },
    field("Task", taskSel),
    h("div", { class: "check" }, follow, h("label", { for: (follow.id = "log-follow") }, "Follow")),
    h("div", { class: "check" }, previous, h("label", { for: (previous.id = "log-previous") }, "Previous run")),
    h("button", { type: "submit" }, "Show log"),
    h("button", {
      type: "button",
      onclick: async () => {
        try {
          const q = previous.checked ? "?previous=true" : "";
          download(`${taskSel.value}.log`, await getText(`projects/${project}/tasks/${taskSel.value}/log${q}`));
        } catch (e) {
          mount(status, `Log not downloaded: ${e instanceof Error ? e.message : e}`);
        }
      },
    }, "Download log"),
  );
  logForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void showLog();
  });

  const drawHead = () => {
    if (!job) return;
    const st = jobState(job);
    const finished = st === "Succeeded" || st === "Failed";
    mount(
      head,
      h("h1", null, `Job ${project}/${name}`),
      stateBadge(st),
      h(
        "div",
        { class: "actions" },
        writable
          ? h("button", {
              type: "button",
              class: "danger",
              onclick: async () => {
                if (!confirm(finished ? `Delete job ${name}?` : `Stop job ${name}? Its tasks are stopped and the job deleted.`)) return;
                try {
                  await call("DELETE", `projects/${project}/jobs/${name}`);
                  // the watch may have shown it gone before this answer came
                  if (job) mount(status, finished ? `Job ${name} deleted.` : `Job ${name} stopping: its tasks are being stopped.`);
                } catch (e) {
                  notice(err, e);
                }
              },
            }, finished ? "Delete" : "Stop")
          : null,
        writable ? h("a", { class: "button", href: `#/new?from=${encodeURIComponent(`${project}/${name}`)}` }, "Resubmit") : null,
        h("button", { type: "button", onclick: async () => download(`${name}.yaml`, (await import("yaml")).stringify(manifestOf(job!)), "application/yaml") }, "Download manifest"),
      ),
    );
    const s = job.status ?? {};
    mount(
      summary,
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Created"), h("dd", null, `${job.metadata.creationTimestamp} by ${job.metadata.creator?.user ?? "?"}`),
        h("dt", null, "Restarts"), h("dd", { "data-restarts": s.restartCount ?? 0 }, String(s.restartCount ?? 0)),
        h("dt", null, "Requeues"), h("dd", null, String(s.requeueCount ?? 0)),
        h("dt", null, "Replicas"),
        h("dd", null, Object.entries(s.replicaStatuses ?? {}).map(([t, r]) => `${t}: ${(r as Obj).active ?? 0} active, ${(r as Obj).succeeded ?? 0} succeeded, ${(r as Obj).failed ?? 0} failed`).join("; ") || "-"),
      ),
      h("h2", null, "Conditions"),
      timeline(job),
    );
  };
  const drawTasks = () => {
    mount(
      tasksEl,
      table(
        "Tasks",
        ["Task", "Phase", "Node", "GPUs", "Exit", "Reason", "Started"],
        tasks.map((t) => [t.metadata.name, h("span", { "data-phase": t.status?.phase ?? "Pending" }, t.status?.phase ?? "Pending"), t.spec?.nodeName ?? "-", gpusOf(t), t.status?.exitCode ?? "-", t.status?.reason ?? "", age(t.status?.startTime)]),
      ),
    );
    const cur = taskSel.value;
    mount(taskSel, tasks.map((t) => h("option", { value: t.metadata.name, selected: t.metadata.name === cur }, t.metadata.name)));
    // start following the first task's log once it has one
    const first = tasks.find((t) => ["Running", "Succeeded", "Failed", "Terminating"].includes(t.status?.phase));
    if (!shownTask && first) {
      taskSel.value = first.metadata.name;
      void showLog();
    }
  };

  mount(
    main,
    head,
    err,
    status,
    summary,
    h("h2", null, "Tasks"),
    tasksEl,
    h("h2", null, "Training curves"),
    scalarsEl,
    h("h2", null, "Utilisation"),
    historyEl,
    h("h2", null, "Log"),
    logForm,
    logBox,
    h("h2", null, "Events"),
    eventsEl,
  );
  const poll = async () => {
    try {
      drawScalars(scalarsEl, await call("GET", `projects/${project}/jobs/${name}/scalars`));
      drawHistory(historyEl, await call("GET", `projects/${project}/jobs/${name}/history`));
    } catch {
      /* the job is gone or not readable: its own list says so */
    }
  };
  void poll();
  const timer = setInterval(() => void poll(), POLL_MS);
  ctx.onLeave(() => clearInterval(timer));
  ctx.onLeave(
    liveList(`projects/${project}/jobs`, `fieldSelector=metadata.name%3D${name}`, (items) => {
      const was = job;
      job = items[0] ?? null;
      if (!job && was) mount(status, `Job ${name} is gone.`);
      if (!job && !was) mount(head, h("h1", null, `Job ${project}/${name}`), h("p", null, "No such job (or it was deleted)."));
      drawHead();
    }, (e) => notice(err, e)),
  );
  ctx.onLeave(liveList(`projects/${project}/tasks`, `labelSelector=gantry.dev%2Fjob%3D${name}`, (items) => { tasks = items; drawTasks(); }, (e) => { if (!(e instanceof ApiError && e.code === 404)) notice(err, e); }));
  ctx.onLeave(
    liveList("events", `fieldSelector=involvedObject.name%3D${name}`, (items) => {
      const mine = items.filter((e) => (e.involvedObject?.project ?? project) === project);
      mount(eventsEl, table("Events", ["Last seen", "Type", "Reason", "Object", "Count", "Message"], mine.sort((a, b) => (b.lastTimestamp ?? "").localeCompare(a.lastTimestamp ?? "")).map((e) => [age(e.lastTimestamp), e.type ?? "", e.reason ?? "", `${e.involvedObject?.kind}/${e.involvedObject?.name}`, String(e.count ?? 1), e.message ?? ""])));
    }, () => {}),
  );
}

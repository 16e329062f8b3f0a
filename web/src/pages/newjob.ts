// New training job: the training service's form (project, name,
// framework, image, code address, command, requirements, replica counts,
// GPUs or a gpu-milli share, cpu, memory, volumes, priority class,
// deadline, back-off limit). It shows the YAML it will send, which may be
// edited or replaced by a pasted Kubeflow TFJob/PyTorchJob (gantryd
// converts those), and puts the server's 422 message at the field it names.
import { ApiError, GPU, type Obj, call, get } from "../api";
import { type Ctx, canWrite, notice } from "../ctx";
import { field, h, mount } from "../dom";
import { manifestOf } from "./job";

const MILLI = "gantry.dev/gpu-milli";

type Framework = "pytorch" | "tensorflow" | "command";

interface Vol {
  path: HTMLInputElement;
  mount: HTMLInputElement;
  ro: HTMLInputElement;
  row: HTMLElement;
}

/** "name" -> "name-2", "name-2" -> "name-3": a free-looking name for a resubmit. */
function nextName(n: string): string {
  const m = /^(.*)-(\d+)$/.exec(n);
  return m ? `${m[1]}-${Number(m[2]) + 1}` : `${n}-2`;
}

export async function newJobPage(main: HTMLElement, ctx: Ctx): Promise<void> {
  const { parse, stringify } = await import("yaml");
  const writable = ctx.projects.filter((p) => canWrite(ctx, p.metadata.name));
  if (!writable.length) {
    mount(main, h("h1", null, "New training job"), h("p", null, "You may not create jobs in any project."));
    return;
  }
  const inp = (name: string, attrs: Obj = {}) => h("input", { name, id: `f-${name}`, autocomplete: "off", ...attrs });
  const el = {
    project: h("select", { name: "project", id: "f-project" }, writable.map((p) => h("option", { value: p.metadata.name }, p.metadata.name))),
    name: inp("name", { required: true, pattern: "[a-z0-9]([-a-z0-9]*[a-z0-9])?" }),
    framework: h("select", { name: "framework", id: "f-framework" }, h("option", { value: "pytorch" }, "PyTorch"), h("option", { value: "tensorflow" }, "TensorFlow"), h("option", { value: "command" }, "Plain command")),
    image: inp("image", { list: "images", placeholder: "empty: the node's own filesystem" }),
    git: inp("git", { placeholder: "https://… or file:///…" }),
    revision: inp("revision", { placeholder: "HEAD" }),
    command: h("textarea", { name: "command", id: "f-command", rows: 2, required: true }),
    reqMode: h("select", { name: "reqMode", id: "f-reqMode" }, h("option", { value: "none" }, "None"), h("option", { value: "file" }, "A file in the source"), h("option", { value: "lines" }, "These lines")),
    req: h("textarea", { name: "requirements", id: "f-requirements", rows: 2 }),
    masters: inp("masters", { type: "number", min: 0, value: "1" }),
    workers: inp("workers", { type: "number", min: 0, value: "0" }),
    ps: inp("ps", { type: "number", min: 0, value: "0" }),
    gpus: inp("gpus", { type: "number", min: 0, value: "1" }),
    milli: inp("milli", { type: "number", min: 0, max: 1000, value: "" }),
    cpu: inp("cpu", { value: "1" }),
    memory: inp("memory", { value: "1Gi" }),
    priority: h("select", { name: "priority", id: "f-priority" }, h("option", { value: "" }, "Cluster default")),
    deadline: inp("deadline", { type: "number", min: 1, placeholder: "none" }),
    backoff: inp("backoff", { type: "number", min: 0, value: "2" }),
    yaml: h("textarea", { name: "yaml", id: "f-yaml", rows: 18, spellcheck: "false", class: "code" }),
  };
  const vols: Vol[] = [];
  const volBox = h("div", { class: "vols" });
  const errors = new Map<string, HTMLElement>();
  const top = h("div", { role: "alert", class: "error" });
  let yamlEdited = false;
  let base: Obj = {}; // the template a resubmitted job had (env, args, ... kept)

  // The images and storage roots gantryd offers (--image, --storage-root),
  const info: Obj = await get("clusterinfo").catch(() => ({}));
  const roots: string[] = info.storageRoots ?? [];
  const images: Obj[] = info.images ?? [];
  // and the images built in the projects the user may read (Succeeded ImageBuilds)
  for (const b of (await get("imagebuilds").catch(() => ({ items: [] }))).items ?? []) {
    const st = b.status ?? {};
    if (st.phase === "Succeeded" && st.image) {
      images.push({ name: `${b.metadata.project}/${b.spec.image} (built)`, image: st.digest ? `${st.image}@${st.digest}` : st.image });
    }
  }
  for (const pc of (await get("priorityclasses").catch(() => ({ items: [] }))).items ?? []) {
    el.priority.append(h("option", { value: pc.metadata.name }, `${pc.metadata.name} (${pc.value})`));
  }

  const masterType = () => (el.framework.value === "tensorflow" ? "Chief" : "Master");
  const addVol = (path = "", mnt = "", ro = false) => {
    const i = vols.length;
    const v: Vol = {
      path: inp(`vol-${i}-path`, { value: path, list: "roots", placeholder: roots[0] ? `${roots[0]}/…` : "no storage roots: volumes are refused" }),
      mount: inp(`vol-${i}-mount`, { value: mnt, placeholder: "/data" }),
      ro: h("input", { type: "checkbox", id: `f-vol-${i}-ro`, checked: ro }),
      row: h("div"),
    };
    mount(v.row, field(`Volume ${i + 1} host path (beneath a storage root)`, v.path), field(`Volume ${i + 1} mount path`, v.mount), h("div", { class: "check" }, v.ro, h("label", { for: v.ro.id }, "Read-only")));
    v.row.className = "vol";
    vols.push(v);
    volBox.append(v.row);
    for (const x of [v.path, v.mount, v.ro]) x.addEventListener("input", refresh);
  };

  /** The Job the form describes. */
  const build = (): Obj => {
    const fw = el.framework.value as Framework;
    const limits: Obj = { cpu: el.cpu.value.trim() || undefined, memory: el.memory.value.trim() || undefined };
    if (el.milli.value) limits[MILLI] = Number(el.milli.value);
    else if (Number(el.gpus.value) > 0) limits[GPU] = Number(el.gpus.value);
    for (const k of Object.keys(limits)) if (limits[k] === undefined) delete limits[k];
    const used = vols.filter((v) => v.path.value.trim());
    const template: Obj = { ...base, command: ["/bin/sh", "-c", el.command.value], resources: { limits } };
    if (el.image.value.trim()) template.image = el.image.value.trim();
    else delete template.image;
    if (used.length) template.volumeMounts = used.map((v, i) => ({ name: `vol${i}`, mountPath: v.mount.value.trim() || v.path.value.trim(), ...(v.ro.checked ? { readOnly: true } : {}) }));
    else delete template.volumeMounts;
    const replicas: Obj = {};
    const add = (type: string, n: number) => {
      if (n > 0) replicas[type] = { replicas: n, restartPolicy: "OnFailure", template: structuredClone(template) };
    };
    if (fw === "command") {
      add("Worker", Math.max(1, Number(el.workers.value) || 0));
    } else {
      add(masterType(), Number(el.masters.value) || 0);
      add("Worker", Number(el.workers.value) || 0);
      if (fw === "tensorflow") add("PS", Number(el.ps.value) || 0);
    }
    const runPolicy: Obj = {};
    if (el.backoff.value !== "") runPolicy.backoffLimit = Number(el.backoff.value);
    if (el.deadline.value !== "") runPolicy.activeDeadlineSeconds = Number(el.deadline.value);
    if (el.priority.value) runPolicy.schedulingPolicy = { priorityClass: el.priority.value };
    const spec: Obj = { replicaSpecs: replicas, runPolicy };
    if (el.git.value.trim()) spec.source = { git: el.git.value.trim(), ...(el.revision.value.trim() ? { revision: el.revision.value.trim() } : {}) };
    if (el.reqMode.value === "file" && el.req.value.trim()) spec.requirements = el.req.value.trim();
    if (el.reqMode.value === "lines") spec.requirements = el.req.value.split("\n").map((l) => l.trim()).filter(Boolean);
    if (used.length) spec.volumes = used.map((v, i) => ({ name: `vol${i}`, hostPath: v.path.value.trim(), ...(v.ro.checked ? { readOnly: true } : {}) }));
    const metadata: Obj = { name: el.name.value.trim(), project: el.project.value };
    if (fw !== "command") metadata.annotations = { "gantry.dev/framework": fw };
    return { apiVersion: "gantry.dev/v1", kind: "Job", metadata, spec };
  };

  function refresh(): void {
    el.ps.disabled = el.framework.value !== "tensorflow";
    el.masters.disabled = el.framework.value === "command";
    el.req.disabled = el.reqMode.value === "none";
    if (!yamlEdited) el.yaml.value = stringify(build());
  }

  const clearErrors = () => {
    for (const e of errors.values()) e.remove();
    errors.clear();
    for (const c of main.querySelectorAll("[aria-invalid]")) c.removeAttribute("aria-invalid");
    mount(top);
  };

  /** The form control a server field path names (else the YAML). */
  const controlFor = (f: string): HTMLElement => {
    if (yamlEdited || !f) return el.yaml;
    let m: RegExpExecArray | null;
    if ((m = /^spec\.volumes\[(\d+)\]/.exec(f))) return vols.filter((v) => v.path.value.trim())[Number(m[1])]?.path ?? el.yaml;
    if ((m = /volumeMounts\[(\d+)\]/.exec(f))) return vols.filter((v) => v.path.value.trim())[Number(m[1])]?.mount ?? el.yaml;
    if ((m = /^spec\.replicaSpecs\.(\w+)\.replicas/.exec(f))) return m[1] === "Worker" ? el.workers : m[1] === "PS" ? el.ps : el.masters;
    const table: [RegExp, HTMLElement][] = [
      [/^metadata\.name/, el.name],
      [/^metadata\.project/, el.project],
      [/^spec\.source\.revision/, el.revision],
      [/^spec\.source/, el.git],
      [/^spec\.requirements/, el.req],
      [/template\.image/, el.image],
      [/template\.command/, el.command],
      [/gpu-milli/, el.milli],
      [/nvidia\.com\/gpu/, el.gpus],
      [/resources.*\.cpu/, el.cpu],
      [/resources.*\.memory/, el.memory],
      [/backoffLimit/, el.backoff],
      [/activeDeadlineSeconds/, el.deadline],
      [/priorityClass/, el.priority],
    ];
    return table.find(([re]) => re.test(f))?.[1] ?? el.yaml;
  };

  const showError = (e: ApiError) => {
    const c = controlFor(e.field);
    const id = `${c.id}-error`;
    const msg = h("p", { class: "field-error", id }, e.message);
    c.setAttribute("aria-invalid", "true");
    c.setAttribute("aria-describedby", [c.getAttribute("aria-describedby"), id].filter(Boolean).join(" "));
    c.parentElement?.append(msg);
    errors.set(id, msg);
    mount(top, `The job was not created: ${e.message}`);
    c.focus();
  };

  const form = h(
    "form",
    { class: "jobform", "aria-label": "New training job", novalidate: true },
    h("datalist", { id: "images" }, images.map((i) => h("option", { value: i.image, label: i.name }))),
    h("datalist", { id: "roots" }, roots.map((r) => h("option", { value: `${r}/` }))),
    top,
    h("fieldset", null, h("legend", null, "Job"), field("Project", el.project), field("Name", el.name, "lower-case letters, digits and '-'"), field("Framework", el.framework), field("Image", el.image, "an OCI image reference, or one the cluster lists")),
    h("fieldset", null, h("legend", null, "Code"), field("Git repository", el.git), field("Revision", el.revision, "a full commit, branch or tag"), field("Command", el.command, "run with /bin/sh -c in the checkout"), field("Requirements", el.reqMode), field("Requirements file or lines", el.req, "a path such as requirements.txt, or one requirement per line")),
    h("fieldset", null, h("legend", null, "Replicas and resources"), field("Master / chief replicas", el.masters), field("Worker replicas", el.workers, "a plain command runs as workers only (at least one)"), field("Parameter servers (TensorFlow)", el.ps), field("GPUs per replica", el.gpus), field("Or a GPU share (gpu-milli, 1-1000)", el.milli), field("CPU per replica", el.cpu, "cores, e.g. 2 or 500m"), field("Memory per replica", el.memory, "e.g. 16Gi")),
    h("fieldset", null, h("legend", null, "Volumes"), volBox, h("div", { class: "row" }, h("button", { type: "button", onclick: () => { addVol(); refresh(); } }, "Add a volume"))),
    h("fieldset", null, h("legend", null, "Policy"), field("Priority class", el.priority), field("Deadline (seconds)", el.deadline), field("Back-off limit (restarts)", el.backoff)),
    h(
      "fieldset",
      null,
      h("legend", null, "What will be sent"),
      field("Job YAML (editable; a Kubeflow TFJob or PyTorchJob works too)", el.yaml),
      h("button", { type: "button", onclick: () => { yamlEdited = false; refresh(); } }, "Reset YAML from the form"),
    ),
    h("button", { type: "submit", class: "primary" }, "Create job"),
  );
  addVol();
  form.addEventListener("input", (ev) => {
    if (ev.target === el.yaml) yamlEdited = true;
    else refresh();
  });
  form.addEventListener("change", (ev) => {
    if (ev.target !== el.yaml) refresh();
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors();
    let obj: Obj;
    try {
      obj = yamlEdited ? parse(el.yaml.value) : build();
    } catch (e) {
      showError(new ApiError(400, `YAML: ${e instanceof Error ? e.message : e}`));
      return;
    }
    const md = (obj.metadata ??= {});
    const project = md.project ?? md.namespace ?? el.project.value;
    try {
      const made = await call("POST", `projects/${encodeURIComponent(project)}/jobs`, obj);
      location.hash = `#/job/${made.metadata.project}/${made.metadata.name}`;
    } catch (e) {
      if (e instanceof ApiError && e.code !== 403) showError(e);
      else notice(top, e);
    }
  });
  mount(main, h("h1", null, "New training job"), form);

  const from = ctx.params.get("from");
  if (from) {
    const [p, n] = from.split("/");
    try {
      const j = await get(`projects/${p}/jobs/${n}`);
      const m = manifestOf(j);
      const specs: Obj = m.spec?.replicaSpecs ?? {};
      const first: Obj = (specs.Master ?? specs.Chief ?? specs.Worker ?? Object.values(specs)[0] ?? {}).template ?? {};
      base = structuredClone(first);
      delete base.command;
      el.project.value = p;
      el.name.value = nextName(n);
      const fw = j.metadata.annotations?.["gantry.dev/framework"];
      el.framework.value = fw === "pytorch" || fw === "tensorflow" ? fw : specs.Master || specs.Chief ? "pytorch" : "command";
      el.masters.value = String((specs.Master ?? specs.Chief)?.replicas ?? 0);
      el.workers.value = String(specs.Worker?.replicas ?? 0);
      el.ps.value = String(specs.PS?.replicas ?? 0);
      const cmd: string[] = first.command ?? [];
      el.command.value = cmd[0] === "/bin/sh" && cmd[1] === "-c" ? cmd.slice(2).join(" ") : [...cmd, ...(first.args ?? [])].join(" ");
      if (!(cmd[0] === "/bin/sh" && cmd[1] === "-c")) delete base.args;
      el.image.value = first.image ?? "";
      const lim = first.resources?.limits ?? {};
      el.gpus.value = String(lim[GPU] ?? 0);
      el.milli.value = lim[MILLI] ? String(lim[MILLI]) : "";
      el.cpu.value = String(lim.cpu ?? "");
      el.memory.value = String(lim.memory ?? "");
      el.git.value = m.spec?.source?.git ?? "";
      el.revision.value = m.spec?.source?.revision ?? "";
      const req = m.spec?.requirements;
      el.reqMode.value = Array.isArray(req) ? "lines" : req ? "file" : "none";
      el.req.value = Array.isArray(req) ? req.join("\n") : req ?? "";
      const rp = m.spec?.runPolicy ?? {};
      el.backoff.value = rp.backoffLimit !== undefined ? String(rp.backoffLimit) : "";
      el.deadline.value = rp.activeDeadlineSeconds ? String(rp.activeDeadlineSeconds) : "";
      el.priority.value = rp.schedulingPolicy?.priorityClass ?? "";
      const mounts: Obj[] = first.volumeMounts ?? [];
      vols.splice(0).forEach((v) => v.row.remove());
      for (const v of m.spec?.volumes ?? []) {
        const mt = mounts.find((x) => x.name === v.name);
        addVol(v.hostPath, mt?.mountPath ?? "", !!v.readOnly);
      }
      if (!vols.length) addVol();
      delete base.volumeMounts;
      delete base.resources;
      delete base.image;
    } catch (e) {
      notice(top, e);
    }
  }
  refresh();
  el.name.focus();
}

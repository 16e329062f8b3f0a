// Volumes: each project's disks (capacity, usage on the storage root,
// access mode, the tasks using it), read again every few seconds since
// usage and users are computed by gantryd on reads. Members create
// Volumes (refused over the storage quota, with the server's message at
// the size field) and delete unused ones (refused, naming the users, while
// in use).
import { ApiError, type Obj, call, get, qty, showQty } from "../api";
import { type Ctx, canWrite, refreshEvery, statusArea } from "../ctx";
import { age, field, h, mount, table } from "../dom";

const REFRESH_MS = 3000;
const MODES = ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"];

function createForm(projects: string[], done: (msg: string) => void): HTMLElement {
  const project = h("select", { name: "project", id: "v-project" }, projects.map((p) => h("option", { value: p }, p)));
  const name = h("input", { name: "name", id: "v-name", required: true, autocomplete: "off", pattern: "[a-z0-9]([-a-z0-9]*[a-z0-9])?" });
  const size = h("input", { name: "size", id: "v-size", required: true, autocomplete: "off", placeholder: "64Mi" });
  const mode = h("select", { name: "accessMode", id: "v-mode" }, MODES.map((m) => h("option", { value: m }, m)));
  const sizeError = h("p", { class: "error", id: "v-size-error", role: "alert" });
  const form = h(
    "form",
    { class: "inline", "aria-label": "Create a volume" },
    field("Project", project),
    field("Name", name),
    field("Size", size, "counted against the storage quota"),
    field("Access", mode),
    h("button", { type: "submit" }, "Create volume"),
    sizeError,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    mount(sizeError);
    const body = {
      apiVersion: "gantry.dev/v1",
      kind: "Volume",
      metadata: { name: name.value.trim(), project: project.value },
      spec: { capacity: { storage: size.value.trim() }, accessMode: mode.value },
    };
    try {
      await call("POST", `projects/${project.value}/volumes`, body);
      done(`Volume ${body.metadata.name} created.`);
    } catch (e) {
      if (e instanceof ApiError && e.field.startsWith("spec.capacity")) {
        mount(sizeError, e.message);
        size.setAttribute("aria-invalid", "true");
        size.setAttribute("aria-describedby", "v-size-hint v-size-error");
      } else {
        done(`Create volume: ${e instanceof Error ? e.message : e}`);
      }
    }
  });
  return form;
}

export function volumesPage(main: HTMLElement, ctx: Ctx): void {
  const status = statusArea();
  const err = h("div");
  const body = h("div");
  const writable = ctx.projects.map((p) => p.metadata.name as string).filter((p) => canWrite(ctx, p));
  const say = (m: string) => {
    mount(status, m);
    reload();
  };
  const form = writable.length ? createForm(writable, say) : null;
  mount(main, h("h1", null, "Volumes"), err, status, form, body);
  const del = (v: Obj) => async () => {
    const { name, project } = v.metadata;
    try {
      await call("DELETE", `projects/${project}/volumes/${name}`);
      say(`Volume ${name} deleted.`);
    } catch (e) {
      say(`Delete ${name}: ${e instanceof Error ? e.message : e}`);
    }
  };
  const draw = (items: Obj[]) => {
    const rows = items.map((v) => {
      const cap = qty(v.spec?.capacity?.storage);
      const used = qty(v.status?.usage);
      const users: string[] = v.status?.users ?? [];
      return [
        v.metadata.project,
        v.metadata.name,
        showQty("storage", cap),
        `${showQty("storage", used)} (${cap ? Math.round((used / cap) * 100) : 0}%)`,
        `${v.spec?.accessMode ?? ""}${v.spec?.readOnly ? ", read-only" : ""}`,
        v.status?.storageClass ?? "",
        v.status?.phase ?? "",
        users.join(", ") || "-",
        age(v.metadata.creationTimestamp),
        canWrite(ctx, v.metadata.project)
          ? h("button", { type: "button", class: "danger small", onclick: del(v) }, `Delete ${v.metadata.name}`)
          : "",
      ];
    });
    mount(
      body,
      items.length
        ? table("Volumes", ["Project", "Name", "Capacity", "Usage", "Access", "Class", "Phase", "Used by", "Age", "Action"], rows, "volumes")
        : h("p", null, "No volumes."),
    );
  };
  const reload = refreshEvery(ctx, REFRESH_MS, err, async () => {
    const list = await get("volumes");
    draw(list.items ?? []);
  });
}

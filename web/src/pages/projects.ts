// Projects: members and their roles, hard caps; project admins (and
// department and cluster admins) add and remove members.
import { type Obj, call, get } from "../api";
import { type Ctx, canAdminProject, loadTenancy, notice, statusArea } from "../ctx";
import { field, h, mount, table } from "../dom";

async function changeMembers(name: string, fn: (members: Obj[]) => Obj[]): Promise<void> {
  const p = await get(`projects/${name}`);
  p.spec = { ...p.spec, members: fn(p.spec?.members ?? []) };
  delete p.status;
  await call("PUT", `projects/${name}`, p);
}

function projectCard(p: Obj, ctx: Ctx, redraw: () => void, say: (m: string) => void): HTMLElement {
  const name = p.metadata.name;
  const admin = canAdminProject(ctx, name);
  const act = (what: string, fn: () => Promise<void>) => async () => {
    try {
      await fn();
      say(`${what}: done.`);
      await loadTenancy(ctx);
      redraw();
    } catch (e) {
      say(`${what}: ${e instanceof Error ? e.message : e}`);
    }
  };
  const members: Obj[] = p.spec?.members ?? [];
  const rows = members.map((m) => [
    m.user,
    m.role,
    admin
      ? h(
          "button",
          {
            type: "button",
            class: "danger small",
            onclick: act(`Remove ${m.user} from ${name}`, () =>
              changeMembers(name, (ms) => ms.filter((x) => x.user !== m.user)),
            ),
          },
          `Remove ${m.user}`,
        )
      : "",
  ]);
  let form: HTMLElement | null = null;
  if (admin) {
    const user = h("input", { name: "user", required: true, autocomplete: "off" });
    const role = h("select", { name: "role" }, ["member", "viewer", "admin"].map((r) => h("option", { value: r }, r)));
    form = h(
      "form",
      { class: "inline", "aria-label": `Add a member to ${name}` },
      field("User", user),
      field("Role", role),
      h("button", { type: "submit" }, "Add member"),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void act(`Add ${user.value} to ${name}`, () =>
        changeMembers(name, (ms) => [...ms.filter((x) => x.user !== user.value.trim()), { user: user.value.trim(), role: role.value }]),
      )();
    });
  }
  const hard = Object.entries(p.spec?.hard ?? {});
  return h(
    "section",
    { class: "card", "data-project": name, "aria-labelledby": `proj-${name}` },
    h("h2", { id: `proj-${name}` }, name),
    h("p", null, `Department ${p.spec?.department ?? "-"} · privileged tasks ${p.spec?.allowPrivileged ? "allowed" : "not allowed"}`),
    h("p", null, h("strong", null, "Hard caps: "), hard.length ? hard.map(([k, v]) => `${k} ${v}`).join(", ") : "none"),
    table(`Members of ${name}`, admin ? ["User", "Role", "Action"] : ["User", "Role"], admin ? rows : rows.map((r) => r.slice(0, 2))),
    form,
  );
}

export function projectsPage(main: HTMLElement, ctx: Ctx): void {
  const list = h("div", { class: "cards" });
  const status = statusArea();
  const err = h("div");
  mount(main, h("h1", null, "Projects"), err, status, list);
  const say = (m: string) => mount(status, m);
  const draw = () => {
    try {
      mount(list, ctx.projects.length ? ctx.projects.map((p) => projectCard(p, ctx, draw, say)) : h("p", null, "You belong to no project."));
    } catch (e) {
      notice(err, e);
    }
  };
  draw();
}

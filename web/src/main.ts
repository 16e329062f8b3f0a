// The dashboard: a login page, then one page per part of the platform,
// chosen by the URL's hash (#/jobs, #/job/PROJECT/NAME, ...), so gantryd
// serves only "/" and the hashed assets.
import "./style.css";
import { ApiError, type UserInfo, get, getToken, setToken } from "./api";
import { type Ctx, loadTenancy } from "./ctx";
import { h, mount } from "./dom";
import { clusterPage } from "./pages/cluster";
import { departmentsPage } from "./pages/departments";
import { eventsPage } from "./pages/events";
import { jobPage } from "./pages/job";
import { jobsPage } from "./pages/jobs";
import { modelsPage } from "./pages/models";
import { newJobPage } from "./pages/newjob";
import { notebooksPage } from "./pages/notebooks";
import { projectsPage } from "./pages/projects";
import { queuePage } from "./pages/queue";
import { REPLICA_STATUS_ID, followReplicas, paintReplicas } from "./replicas";
import { servingPage } from "./pages/serving";
import { usagePage } from "./pages/usage";
import { volumesPage } from "./pages/volumes";

type Page = (main: HTMLElement, ctx: Ctx) => void | Promise<void>;

const PAGES: { route: string; title: string; page: Page; nav: boolean }[] = [
  { route: "cluster", title: "Cluster", page: clusterPage, nav: true },
  { route: "departments", title: "Departments", page: departmentsPage, nav: true },
  { route: "projects", title: "Projects", page: projectsPage, nav: true },
  { route: "queue", title: "Queue", page: queuePage, nav: true },
  { route: "jobs", title: "Jobs", page: jobsPage, nav: true },
  { route: "job", title: "Job", page: jobPage, nav: false },
  { route: "new", title: "New training job", page: newJobPage, nav: true },
  { route: "notebooks", title: "Notebooks", page: notebooksPage, nav: true },
  { route: "volumes", title: "Volumes", page: volumesPage, nav: true },
  { route: "models", title: "Models", page: modelsPage, nav: true },
  { route: "serving", title: "Serving", page: servingPage, nav: true },
  { route: "events", title: "Events", page: eventsPage, nav: true },
  { route: "usage", title: "Usage", page: usagePage, nav: true },
];

let leave: (() => void)[] = [];
let pageCtl = new AbortController();
let me: UserInfo | null = null;
let generation = 0; // of render(): a newer navigation wins over one still loading

function leavePage(): void {
  pageCtl.abort();
  for (const fn of leave) fn();
  leave = [];
  pageCtl = new AbortController();
}

function loginPage(app: HTMLElement, why = ""): void {
  leavePage();
  document.title = "Sign in · gantry";
  const input = h("input", {
    id: "token",
    type: "password",
    name: "token",
    autocomplete: "current-password",
    required: true,
  });
  const msg = h("p", { class: "error", role: "alert", id: "login-error" }, why);
  const form = h(
    "form",
    { class: "login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "Sign in to gantry"),
    h("p", null, "Paste the access token your cluster admin gave you."),
    h("div", { class: "field" }, h("label", { for: "token" }, "Access token"), input),
    msg,
    h("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    try {
      me = await get<UserInfo>("whoami");
      if (!location.hash || location.hash === "#/login") location.hash = "#/jobs";
      await render();
    } catch (e) {
      setToken(null);
      mount(msg, e instanceof ApiError && e.code === 401 ? "That token was refused." : String(e));
      input.focus();
    }
  });
  mount(app, h("main", { id: "main" }, form));
  input.focus();
}

function shell(app: HTMLElement, current: string, user: UserInfo, admin: boolean): HTMLElement {
  const main = h("main", { id: "main", tabindex: "-1" });
  const logout = h("button", { type: "button", class: "link" }, "Log out");
  logout.addEventListener("click", () => {
    setToken(null);
    me = null;
    location.hash = "#/login";
  });
  mount(
    app,
    h("a", { class: "skip", href: "#main", onclick: (e: Event) => { e.preventDefault(); main.focus(); } }, "Skip to content"),
    h(
      "header",
      { class: "top" },
      h("span", { class: "brand" }, "gantry"),
      h(
        "nav",
        { "aria-label": "Main" },
        h(
          "ul",
          null,
          PAGES.filter((p) => p.nav).map((p) =>
            h(
              "li",
              null,
              h("a", { href: `#/${p.route}`, "aria-current": p.route === current ? "page" : false }, p.title),
            ),
          ),
        ),
      ),
      h(
        "div",
        { class: "who" },
        h("span", { class: "replica", id: REPLICA_STATUS_ID }),
        h("span", { class: "user" }, user.username, admin ? " (admin)" : ""),
        logout,
      ),
    ),
    main,
  );
  paintReplicas();
  return main;
}

async function render(): Promise<void> {
  const app = document.getElementById("app")!;
  const gen = ++generation;
  leavePage();
  if (!getToken()) {
    loginPage(app);
    return;
  }
  const tenancy = { projects: [], departments: [] };
  const loading = loadTenancy(tenancy); // together with whoami: one round trip less
  followReplicas().catch(() => {}); // a page without failover still works
  try {
    me ??= await get<UserInfo>("whoami");
  } catch (e) {
    loading.catch(() => {});
    setToken(null);
    loginPage(app, e instanceof ApiError && e.code === 401 ? "That token was refused." : String(e));
    return;
  }
  if (gen !== generation) return;
  const hash = location.hash.replace(/^#\/?/, "") || "jobs";
  const [pathPart, query = ""] = hash.split("?");
  const segs = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
  const entry = PAGES.find((p) => p.route === segs[0]) ?? PAGES.find((p) => p.route === "jobs")!;
  const admin = me.groups.includes("gantry:admins");
  const main = shell(app, entry.route, me, admin);
  document.title = `${entry.title} · gantry`;
  const ctx: Ctx = {
    me,
    admin,
    projects: [],
    departments: [],
    params: new URLSearchParams(query),
    path: segs.slice(1),
    signal: pageCtl.signal,
    // a page still loading when the user moved on stops what it starts at once
    onLeave: (fn) => (gen === generation ? leave.push(fn) : fn()),
  };
  try {
    await loading;
    Object.assign(ctx, tenancy);
    if (gen !== generation) return;
    await entry.page(main, ctx);
  } catch (e) {
    mount(main, h("p", { class: "error", role: "alert" }, e instanceof Error ? e.message : String(e)));
  }
}

window.addEventListener("hashchange", () => {
  if (location.hash === "#main") return;
  void render();
});
window.addEventListener("gantry:unauthorized", () => {
  if (!me) return; // signing in: the login page says the token was refused
  setToken(null);
  me = null;
  loginPage(document.getElementById("app")!, "Your session has ended; sign in again.");
});
void render();

// What every page is given: who the user is, what they may do, and the
// page's lifetime (stop watches when the user navigates away).
import { type Obj, type UserInfo, ApiError, get } from "./api";
import { h, mount } from "./dom";

export interface Ctx {
  me: UserInfo;
  admin: boolean;
  projects: Obj[]; // the projects the user may read
  departments: Obj[];
  params: URLSearchParams; // the query after "#/page?"
  path: string[]; // the route's segments after the page name
  signal: AbortSignal; // aborted when the page is left
  onLeave(fn: () => void): void;
}

export function roleIn(ctx: Ctx, project: string): string {
  const p = ctx.projects.find((x) => x.metadata.name === project);
  const m = (p?.spec?.members ?? []).find((x: Obj) => x.user === ctx.me.username);
  return m?.role ?? "";
}

function deptAdmin(ctx: Ctx, project: string): boolean {
  const p = ctx.projects.find((x) => x.metadata.name === project);
  const d = ctx.departments.find((x) => x.metadata.name === p?.spec?.department);
  return (d?.spec?.admins ?? []).includes(ctx.me.username);
}

/** May the user create and change jobs in project? */
export function canWrite(ctx: Ctx, project: string): boolean {
  const r = roleIn(ctx, project);
  return ctx.admin || r === "admin" || r === "member" || deptAdmin(ctx, project);
}

/** May the user change the Project object (its members)? */
export function canAdminProject(ctx: Ctx, project: string): boolean {
  return ctx.admin || roleIn(ctx, project) === "admin" || deptAdmin(ctx, project);
}

export async function loadTenancy(ctx: Pick<Ctx, "projects" | "departments">): Promise<void> {
  const [p, d] = await Promise.all([get("projects"), get("departments")]);
  ctx.projects = p.items ?? [];
  ctx.departments = d.items ?? [];
}

/** A page-level message: errors as alerts, 403 as a plain sentence. */
export function notice(el: HTMLElement, e: unknown): void {
  const msg =
    e instanceof ApiError && e.code === 403
      ? `You are not allowed to do that: ${e.message}`
      : e instanceof Error
        ? e.message
        : String(e);
  mount(el, h("p", { class: "error", role: "alert" }, msg));
}

/** Run fetch now and every ms until the page is left, showing its errors
 * in err (cleared once it succeeds); returns a function that runs it now. */
export function refreshEvery(ctx: Ctx, ms: number, err: HTMLElement, fetch: () => Promise<void>): () => void {
  const load = async () => {
    try {
      await fetch();
      mount(err);
    } catch (e) {
      notice(err, e);
    }
  };
  void load();
  const timer = setInterval(() => void load(), ms);
  ctx.onLeave(() => clearInterval(timer));
  return () => void load();
}

/** An area for messages after actions, announced to screen readers. */
export function statusArea(): HTMLElement {
  return h("div", { class: "status-area", role: "status", "aria-live": "polite" });
}

// The dashboard's only way to gantry: the public JSON API (docs/api.md)
// with the user's bearer token, kept in sessionStorage (gone when the tab
// closes). Live views list once, then follow the watch stream from the
// list's resourceVersion; a broken stream is resumed, a compacted one
// (410) listed again.

export const API = "/apis/gantry.dev/v1";
const TOKEN_KEY = "gantry.token";

export type Obj = Record<string, any>;

export interface UserInfo {
  username: string;
  uid: number;
  groups: string[];
}

/** A failed request: the Status object's code, message and field. */
export class ApiError extends Error {
  constructor(
    public code: number,
    message: string,
    public field = "",
  ) {
    super(message);
  }
}

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(json: boolean): HeadersInit {
  const hd: Record<string, string> = { Authorization: `Bearer ${getToken() ?? ""}` };
  if (json) hd["Content-Type"] = "application/json";
  return hd;
}

async function failure(resp: Response): Promise<ApiError> {
  let msg = `${resp.status} ${resp.statusText}`;
  let field = "";
  try {
    const st = await resp.json();
    if (st && typeof st.message === "string") msg = st.message;
    field = st?.details?.field ?? "";
  } catch {
    /* not a Status body */
  }
  if (resp.status === 401) window.dispatchEvent(new Event("gantry:unauthorized"));
  return new ApiError(resp.status, msg, field);
}

/** One request to path (under API unless it starts with "/apis" or "/");
 * the parsed JSON answer, or throws ApiError. */
export async function call<T = Obj>(method: string, path: string, body?: unknown): Promise<T> {
  const resp = await fetch(path.startsWith("/") ? path : `${API}/${path}`, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!resp.ok) throw await failure(resp);
  return (await resp.json()) as T;
}

export const get = <T = Obj>(path: string) => call<T>("GET", path);

/** Raw text of a GET (logs). */
export async function getText(path: string): Promise<string> {
  const resp = await fetch(`${API}/${path}`, { headers: headers(false) });
  if (!resp.ok) throw await failure(resp);
  return resp.text();
}

/** Read a streamed GET chunk by chunk until it ends or signal aborts. */
export async function stream(
  path: string,
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const resp = await fetch(`${API}/${path}`, { headers: headers(false), signal });
  if (!resp.ok || !resp.body) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: Obj;
}

/** Object key within a list: "project/name" or "name". */
export function keyOf(o: Obj): string {
  const md = o.metadata ?? {};
  return md.project ? `${md.project}/${md.name}` : md.name;
}

/** A live view of a list: onChange(items, all) after the first list and
 * after every batch of watch events, items in list order. query is added
 * to both the list and the watch ("labelSelector=...&fieldSelector=...").
 * Stop it with the returned function. */
export function liveList(
  path: string,
  query: string,
  onChange: (items: Obj[]) => void,
  onError: (e: ApiError) => void,
  onEvent?: (ev: WatchEvent) => void,
): () => void {
  const ctl = new AbortController();
  const items = new Map<string, Obj>();
  let pending = false;
  const changed = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      if (!ctl.signal.aborted) {
        onChange([...items.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1)));
      }
    });
  };
  const sep = query ? "&" : "";
  const run = async () => {
    let rv = "";
    while (!ctl.signal.aborted) {
      try {
        if (!rv) {
          const list = await get(`${path}${query ? `?${query}` : ""}`);
          items.clear();
          for (const o of list.items ?? []) items.set(keyOf(o), o);
          rv = list.metadata?.resourceVersion ?? "0";
          changed();
        }
        let buf = "";
        await stream(
          `${path}?${query}${sep}watch=true&resourceVersion=${rv}`,
          (text) => {
            buf += text;
            let nl: number;
            while ((nl = buf.indexOf("\n")) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (!line) continue;
              const ev = JSON.parse(line) as WatchEvent;
              if (!ev.object?.metadata) continue;
              rv = ev.object.metadata.resourceVersion ?? rv;
              if (ev.type === "DELETED") items.delete(keyOf(ev.object));
              else items.set(keyOf(ev.object), ev.object);
              onEvent?.(ev);
              changed();
            }
          },
          ctl.signal,
        );
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof ApiError) {
          if (e.code === 410) {
            rv = "";
            continue;
          }
          onError(e);
          if (e.code === 401 || e.code === 403) return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  void run();
  return () => ctl.abort();
}

/** Call fn (debounced by ms) after every change of a watched list: for
 * what the API computes from other objects on reads (a node's allocation,
 * a department's usage from tasks). Stop it with the returned function. */
export function afterChanges(
  path: string,
  fn: (items: Obj[]) => Promise<void> | void,
  onError: (e: unknown) => void,
  ms = 50,
): () => void {
  let timer = 0;
  const stop = liveList(path, "", (items) => {
    clearTimeout(timer);
    timer = window.setTimeout(async () => {
      try {
        await fn(items);
      } catch (e) {
        onError(e);
      }
    }, ms);
  }, () => {});
  return () => {
    stop();
    clearTimeout(timer);
  };
}

// ---- quantities (Kubernetes' notation, as the API writes them) ----

const SUFFIX: Record<string, number> = {
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50,
  k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, m: 1e-3,
};

/** A quantity ("500m", "16Gi", 2) as a number of units (cores, bytes, GPUs). */
export function qty(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v !== "string" || !v) return 0;
  const m = /^([0-9.]+)([A-Za-z]*)$/.exec(v.trim());
  if (!m) return 0;
  return parseFloat(m[1]) * (SUFFIX[m[2]] ?? 1);
}

/** A resource amount for people: GPUs, cores, GiB. */
export function showQty(res: string, n: number): string {
  if (res === "memory" || res === "storage") {
    return n >= 2 ** 30 ? `${+(n / 2 ** 30).toFixed(1)} GiB` : `${+(n / 2 ** 20).toFixed(0)} MiB`;
  }
  return `${+n.toFixed(2)}`;
}

export const GPU = "nvidia.com/gpu";
export const RESOURCES = [GPU, "cpu", "memory", "storage"];

/** The True, current condition that tells a job's state. */
export function jobState(j: Obj): string {
  const conds: Obj[] = j.status?.conditions ?? [];
  for (const t of ["Succeeded", "Failed", "Suspended", "Restarting", "Running", "Queued", "Created"]) {
    if (conds.some((c) => c.type === t && c.status === "True")) return t;
  }
  return "Created";
}

/** The job's True Inadmissible condition, if any: the scheduler's verdict
 * that it cannot start at the cluster's and its department's current
 * capacity (reason: ExceedsDepartmentLimit, NoNodeLargeEnough, ...). */
export function inadmissible(j: Obj): Obj | undefined {
  return (j.status?.conditions ?? []).find((x: Obj) => x.type === "Inadmissible" && x.status === "True");
}

/** Attributes of the span showing why a job waits: an Inadmissible job's
 * stands out and carries the verdict's reason. */
export function reasonAttrs(j: Obj): Obj {
  const c = inadmissible(j);
  return c ? { class: "reason inadmissible", "data-inadmissible": c.reason ?? "" } : { class: "reason" };
}

export function waitReason(j: Obj): string {
  const c = (j.status?.conditions ?? []).find((x: Obj) => x.type === "Queued" && x.status === "True");
  return c?.message ?? "";
}

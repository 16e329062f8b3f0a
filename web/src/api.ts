// The dashboard's only way to gantry: the public JSON API (docs/api.md)
// with the user's bearer token, kept in sessionStorage (gone when the tab
// closes). Live views list once, then follow the watch stream from the
// list's resourceVersion; a broken stream is resumed, a compacted one
// (410) listed again.
//
// Several gantryd replicas (docs/ha.md): the page's own origin first, then
// the replicas GET clusterinfo names. A request goes to the one in use; a
// refused connection (fetch's TypeError), no answer within TIMEOUT_MS or a
// 503 moves it to the next, each server once. Reads are sent again there;
// so are writes, and one whose earlier try may have been applied is
// recognised as the CLI does: a create or replace answered 409 whose
// stored object has the spec, labels and annotations sent (and the
// defaults the server filled in) counts as done (the stored object is the
// answer), a delete answered 404 as deleted. A
// watch that breaks resumes on the next server from the resourceVersion
// of the last event it delivered.

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

/** No answer headers within this: the server counts as unreachable (a
 * read the replica parks waits at most 5 s, then 503 or 504). */
const TIMEOUT_MS = 15000;

let servers: string[] = [""]; // origins; "" is the page's own
let inUse = 0;
const serverListeners = new Set<() => void>();

/** The servers requests go to: the page's own origin, then replicas
 * (origins such as "http://10.0.0.2:8443", as GET clusterinfo lists them),
 * each once; the one in use stays in use. */
export function setServers(replicas: string[]): void {
  const cur = servers[inUse];
  const next = [""];
  for (const u of replicas) {
    const o = u.replace(/\/+$/, "");
    if (o !== location.origin && !next.includes(o)) next.push(o);
  }
  servers = next;
  inUse = Math.max(0, servers.indexOf(cur));
  for (const fn of serverListeners) fn();
}

/** Every server's origin (the page's own as location.origin), and the
 * index of the one in use. */
export function serverList(): { origins: string[]; inUse: number } {
  return { origins: servers.map((s) => s || location.origin), inUse };
}

/** Call fn whenever the server list or the server in use changes (for
 * the rest of the page's life). */
export function onServerChange(fn: () => void): void {
  serverListeners.add(fn);
}

function useServer(i: number): void {
  if (i === inUse) return;
  inUse = i;
  for (const fn of serverListeners) fn();
}

/** fetch url (an absolute path) from the servers in turn, starting with
 * the one in use; see the top of this file. The answer, and whether an
 * earlier try may have been applied (it was sent, then refused, timed out
 * or answered 503). A 503 from the last server is returned; a failure to
 * reach it (or signal's abort) is thrown. */
async function send(
  url: string,
  init: RequestInit,
  signal?: AbortSignal,
): Promise<{ resp: Response; again: boolean }> {
  const first = inUse;
  let again = false;
  for (let i = 0; ; i++) {
    const at = (first + i) % servers.length;
    const last = i === servers.length - 1;
    const ctl = new AbortController();
    let timedOut = false;
    // the last server is waited for as long as it takes: there is no next
    const timer = last ? 0 : setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, TIMEOUT_MS);
    const stop = () => ctl.abort();
    signal?.addEventListener("abort", stop);
    let resp: Response | undefined;
    try {
      if (signal?.aborted) throw signal.reason;
      resp = await fetch(servers[at] + url, { ...init, signal: ctl.signal });
    } catch (e) {
      if (signal?.aborted || last || !(e instanceof TypeError || timedOut)) {
        signal?.removeEventListener("abort", stop);
        throw e;
      }
    } finally {
      clearTimeout(timer); // a body (a watch's) may take as long as it likes
    }
    if (resp && (resp.status !== 503 || last)) {
      useServer(at);
      return { resp, again }; // signal still aborts the body
    }
    signal?.removeEventListener("abort", stop);
    void resp?.body?.cancel();
    again = true;
    useServer((at + 1) % servers.length);
  }
}

/** A write whose earlier try may have been applied, answered resp: the
 * stored object if it is the one body describes (a create or a replace
 * answered 409: the stored spec, labels and annotations hold everything
 * sent, with what the server fills in beside it), a Status for a delete
 * answered 404; else undefined. */
async function ownWrite(method: string, url: string, body: unknown, resp: Response): Promise<Obj | undefined> {
  if (method === "DELETE" && resp.status === 404) return { kind: "Status", status: "Success" };
  const sent = body as Obj | undefined;
  const name = sent?.metadata?.name;
  if (resp.status !== 409 || !name || (method !== "POST" && method !== "PUT")) return undefined;
  const got = await send(method === "POST" ? `${url}/${encodeURIComponent(name)}` : url, { headers: headers(false) });
  if (!got.resp.ok) return undefined;
  const stored: Obj = await got.resp.json();
  const md = sent.metadata ?? {};
  const smd = stored.metadata ?? {};
  return holds(stored.spec, sent.spec) && holds(smd.labels, md.labels) && holds(smd.annotations, md.annotations)
    ? stored
    : undefined;
}

/** Does stored have every field of sent, with the same value (and more
 * fields beside, in objects)? */
function holds(stored: unknown, sent: unknown): boolean {
  if (sent === undefined) return true;
  if (Array.isArray(sent)) {
    return Array.isArray(stored) && stored.length === sent.length && sent.every((v, i) => holds(stored[i], v));
  }
  if (sent && typeof sent === "object") {
    if (!stored || typeof stored !== "object" || Array.isArray(stored)) return false;
    return Object.entries(sent).every(([k, v]) => holds((stored as Obj)[k], v));
  }
  return stored === sent;
}

const apiUrl = (path: string) => (path.startsWith("/") ? path : `${API}/${path}`);

/** One request to path (under API unless it starts with "/apis" or "/");
 * the parsed JSON answer, or throws ApiError. */
export async function call<T = Obj>(method: string, path: string, body?: unknown): Promise<T> {
  const url = apiUrl(path);
  const { resp, again } = await send(url, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!resp.ok) {
    const own = again ? await ownWrite(method, url, body, resp) : undefined;
    if (own) return own as T;
    throw await failure(resp);
  }
  return (await resp.json()) as T;
}

export const get = <T = Obj>(path: string) => call<T>("GET", path);

/** Raw text of a GET (logs). */
export async function getText(path: string): Promise<string> {
  const { resp } = await send(`${API}/${path}`, { headers: headers(false) });
  if (!resp.ok) throw await failure(resp);
  return resp.text();
}

/** Read a streamed GET chunk by chunk until it ends or signal aborts. A
 * stream that breaks leaves its server: the next request (the caller's
 * resumption) goes to the next one. */
export async function stream(
  path: string,
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const { resp } = await send(`${API}/${path}`, { headers: headers(false) }, signal);
  if (!resp.ok || !resp.body) throw await failure(resp);
  const at = inUse;
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onText(value);
    }
  } catch (e) {
    if (e instanceof TypeError && !signal.aborted && at === inUse) useServer((at + 1) % servers.length);
    throw e;
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

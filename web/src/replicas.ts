// Which gantryd replica the page talks to and which one leads (docs/ha.md),
// shown in the header when the cluster has several replicas: every
// replica's /readyz (no token: {"status": "leader"|"follower"|..., "replica":
// ID}) is asked every POLL_MS and whenever the server in use changes.
import { get, onServerChange, serverList, setServers } from "./api";
import { mount } from "./dom";

const POLL_MS = 3000;
const READYZ_TIMEOUT_MS = 2000;
export const REPLICA_STATUS_ID = "replica-status";

interface Seen {
  id: string; // "" when unreachable
  status: string;
}

let seen: Seen[] = [];
let started = false;
let round = 0; // of poll(): an older answer never paints over a newer one

async function readyz(origin: string): Promise<Seen> {
  try {
    const resp = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(READYZ_TIMEOUT_MS) });
    const st = await resp.json();
    return { id: String(st.replica ?? ""), status: String(st.status ?? "") };
  } catch {
    return { id: "", status: "" };
  }
}

async function poll(): Promise<void> {
  const mine = ++round;
  const got = await Promise.all(serverList().origins.map(readyz));
  if (mine !== round) return;
  seen = got;
  paintReplicas();
}

/** Learn the replicas from GET clusterinfo (once a page load) and, when
 * there are several, keep the header's replica line current. */
export async function followReplicas(): Promise<void> {
  if (started) return;
  started = true;
  try {
    const ci = await get("clusterinfo");
    setServers(ci.replicas ?? []);
  } catch (e) {
    started = false; // the next page's render tries again
    throw e;
  }
  if (serverList().origins.length < 2) return;
  onServerChange(() => {
    paintReplicas();
    void poll();
  });
  setInterval(() => void poll(), POLL_MS);
  await poll();
}

/** Show the server in use and the leader in the element with id
 * REPLICA_STATUS_ID, if the page has one and there are several replicas. */
export function paintReplicas(): void {
  const el = document.getElementById(REPLICA_STATUS_ID);
  const { origins, inUse } = serverList();
  if (!el || origins.length < 2) return;
  const cur = seen[inUse];
  const leader = seen.find((s) => s.status === "leader");
  el.dataset.server = origins[inUse];
  el.dataset.leader = leader?.id ?? "";
  mount(
    el,
    `Replica ${cur?.id || new URL(origins[inUse]).host}`,
    " · ",
    leader ? `leader ${leader.id}` : "no leader",
  );
}

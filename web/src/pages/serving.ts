// Serving: each project's inference services with their variants (the
// serving controller's status.variants: weight, ready replicas, requests
// per second, error rate, the p50/p99 latency over the gateway's last 10 s
// and HAProxy's average), the live traffic split as a bar, and,
// for members, the weights (or a canary's share) to edit: saved with a PUT
// of the service's spec, retried on a conflict with the controller's
// status writes. Read again every couple of seconds.
import { type Obj, call, get } from "../api";
import { type Ctx, canWrite, notice, statusArea } from "../ctx";
import { age, h, mount, table } from "../dom";

const REFRESH_MS = 2000;

function ready(s: Obj): string {
  const c = (s.status?.conditions ?? []).find((x: Obj) => x.type === "Ready");
  if (!c) return "Pending";
  if (c.status !== "True") return `${c.reason}${c.message ? `: ${c.message}` : ""}`;
  // Ready, but a scale-up waits (QuotaExceeded, Unschedulable) or starts
  const sc = (s.status?.conditions ?? []).find((x: Obj) => x.type === "Scaled");
  return sc && sc.status === "False" ? `Ready · ${sc.reason}: ${sc.message ?? ""}` : "Ready";
}

// a percentile from status (absent: no request over the window)
function ms(v: number | undefined): string {
  return v === undefined || v === null ? "–" : `${v} ms`;
}

function splitBar(vs: Obj[]): HTMLElement {
  const total = vs.reduce((n, v) => n + (v.requestsPerSecond ?? 0), 0);
  return h(
    "div",
    { class: "split", role: "img", "aria-label": `live split: ${vs.map((v) => `${v.name} ${v.role}`).join(", ")}` },
    vs.map((v) => {
      const pct = total > 0 ? Math.round(((v.requestsPerSecond ?? 0) / total) * 100) : v.weight;
      return h("span", { class: `split-part ${v.role}`, style: `width:${pct}%` }, `${v.name} (${v.role}) ${pct}%`);
    }),
  );
}

async function saveSpec(s: Obj, edit: (spec: Obj) => void): Promise<void> {
  const path = `projects/${s.metadata.project}/inferenceservices/${s.metadata.name}`;
  for (let i = 0; ; i++) {
    const cur = await get(path);
    edit(cur.spec);
    try {
      await call("PUT", path, cur);
      return;
    } catch (e) {
      if (i >= 5 || !(e instanceof Error) || !/modified|409/.test(e.message)) throw e;
    }
  }
}

function weightsForm(s: Obj, say: (m: string) => void): HTMLElement {
  const vars: Obj[] = s.spec?.variants ?? [];
  const canary = vars.length === 1;
  const inputs = canary
    ? [h("input", { type: "number", min: "0", max: "100", name: "canary", value: String(s.spec?.canaryTrafficPercent ?? 100), "aria-label": `canary percent of ${s.metadata.name}` })]
    : vars.map((v) => h("input", { type: "number", min: "0", max: "100", name: v.name, value: String(v.weight ?? 100), "aria-label": `weight of ${v.name}` }));
  const form = h(
    "form",
    { class: "inline", "aria-label": `Traffic of ${s.metadata.name}` },
    canary ? [h("label", null, "Canary %", inputs[0])] : vars.map((v, i) => h("label", null, `${v.name} `, inputs[i])),
    h("button", { type: "submit" }, "Save"),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await saveSpec(s, (spec) => {
        if (canary) {
          const n = Number((inputs[0] as HTMLInputElement).value);
          if (n >= 100) delete spec.canaryTrafficPercent;
          else spec.canaryTrafficPercent = n;
        } else {
          spec.variants.forEach((v: Obj, i: number) => (v.weight = Number((inputs[i] as HTMLInputElement).value)));
        }
      });
      say(`Traffic of ${s.metadata.name} saved.`);
    } catch (e) {
      say(`Save ${s.metadata.name}: ${e instanceof Error ? e.message : e}`);
    }
  });
  return form;
}

export function servingPage(main: HTMLElement, ctx: Ctx): void {
  const status = statusArea();
  const err = h("div");
  const body = h("div");
  const say = (m: string) => mount(status, m);
  mount(main, h("h1", null, "Serving"), err, status, body);
  const draw = (items: Obj[]) => {
    // not while a weight is being typed: the redraw would drop it
    if (document.activeElement?.tagName === "INPUT" && body.contains(document.activeElement)) return;
    if (!items.length) {
      mount(body, h("p", null, "No inference services."));
      return;
    }
    mount(
      body,
      items.map((s) => {
        const vs: Obj[] = s.status?.variants ?? [];
        const rows = vs.map((v) => [
          v.name,
          v.role,
          v.revision,
          `${v.weight}%`,
          // ready of desired; an autoscaled variant's bounds after them
          `${v.readyReplicas}/${v.replicas}` + (v.maxReplicas ? ` (${v.minReplicas}..${v.maxReplicas})` : ""),
          `${v.inFlight ?? 0}`,
          (v.requestsPerSecond ?? 0).toFixed(1),
          `${((v.errorRate ?? 0) * 100).toFixed(2)}%`,
          ms(v.latencyP50Ms),
          ms(v.latencyP99Ms),
          `${v.latencyMs ?? 0} ms`,
        ]);
        return h(
          "section",
          { class: "service", "aria-label": `${s.metadata.project}/${s.metadata.name}` },
          h("h2", null, `${s.metadata.project}/${s.metadata.name}`),
          h("p", null, `${ready(s)} · ${s.status?.url ?? ""} · ${s.spec?.public ? "public" : "token required"} · ${age(s.metadata.creationTimestamp)}`),
          splitBar(vs),
          table("Variants", ["Variant", "Role", "Revision", "Weight", "Ready", "In flight", "Req/s", "Errors", "p50", "p99", "Latency (avg)"], rows, "variants"),
          canWrite(ctx, s.metadata.project) ? weightsForm(s, say) : null,
        );
      }),
    );
  };
  const load = async () => {
    try {
      const list = await get("inferenceservices");
      draw(list.items ?? []);
      mount(err);
    } catch (e) {
      notice(err, e);
    }
  };
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  ctx.onLeave(() => clearInterval(timer));
}

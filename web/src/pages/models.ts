// Models: the registry's Models and their versions (number, stage,
// metrics, digest, where the job that made it ran), read again every few
// seconds. Project members change a version's stage (Production moves
// the model's previous Production version to Archived, on the server).
import { type Obj, call, get } from "../api";
import { type Ctx, canWrite, refreshEvery, statusArea } from "../ctx";
import { age, h, mount, table } from "../dom";

const REFRESH_MS = 3000;
const STAGES = ["None", "Staging", "Production", "Archived"];

function metricsText(m: Obj | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${m?.[k]}`)
    .join(", ");
}

function shortDigest(d: string | undefined): string {
  return d ? d.slice(0, "sha256:".length + 12) : "";
}

export function modelsPage(main: HTMLElement, ctx: Ctx): void {
  const status = statusArea();
  const err = h("div");
  const body = h("div");
  mount(main, h("h1", null, "Models"), err, status, body);
  const say = (m: string) => {
    mount(status, m);
    reload();
  };
  const stageSelect = (v: Obj): HTMLElement | string => {
    const { name, project } = v.metadata;
    if (!canWrite(ctx, project)) {
      return v.spec?.stage ?? "None";
    }
    const sel = h(
      "select",
      { "aria-label": `Stage of ${name}` },
      STAGES.map((s) => h("option", { value: s, selected: s === (v.spec?.stage ?? "None") }, s)),
    ) as HTMLSelectElement;
    sel.addEventListener("change", async () => {
      const obj: Obj = { ...v, spec: { ...v.spec, stage: sel.value } };
      delete obj.status;
      try {
        await call("PUT", `projects/${project}/modelversions/${name}`, obj);
        say(`${name} is now ${sel.value}.`);
      } catch (e) {
        say(`Stage ${name}: ${e instanceof Error ? e.message : e}`);
      }
    });
    return sel;
  };
  const draw = (models: Obj[], versions: Obj[]) => {
    const modelRows = models.map((m) => {
      const mine = versions.filter((v) => v.metadata.project === m.metadata.project && v.spec?.model === m.metadata.name);
      const prod = mine.find((v) => v.spec?.stage === "Production");
      return [
        m.metadata.project,
        m.metadata.name,
        m.spec?.framework ?? "",
        m.spec?.description ?? "",
        String(mine.length),
        prod ? `v${prod.status?.version}` : "-",
        age(m.metadata.creationTimestamp),
      ];
    });
    const byNumber = [...versions].sort(
      (a, b) =>
        `${a.metadata.project}/${a.spec?.model}`.localeCompare(`${b.metadata.project}/${b.spec?.model}`) ||
        (a.status?.version ?? 0) - (b.status?.version ?? 0),
    );
    const versionRows = byNumber.map((v) => [
      v.metadata.project,
      v.spec?.model ?? "",
      String(v.status?.version ?? ""),
      stageSelect(v),
      v.status?.phase ?? "",
      metricsText(v.spec?.metrics),
      h("code", { title: v.status?.digest ?? "" }, shortDigest(v.status?.digest)),
      v.status?.sourceJob ?? "-",
      age(v.metadata.creationTimestamp),
    ]);
    mount(
      body,
      models.length
        ? table("Models", ["Project", "Name", "Framework", "Description", "Versions", "Production", "Age"], modelRows, "models")
        : h("p", null, "No models."),
      h("h2", null, "Versions"),
      versions.length
        ? table(
            "Model versions",
            ["Project", "Model", "Version", "Stage", "Phase", "Metrics", "Digest", "Source job", "Age"],
            versionRows,
            "modelversions",
          )
        : h("p", null, "No versions: register one with gantry model register."),
    );
  };
  const reload = refreshEvery(ctx, REFRESH_MS, err, async () => {
    const [models, versions] = await Promise.all([get("models"), get("modelversions")]);
    draw(models.items ?? [], versions.items ?? []);
  });
}

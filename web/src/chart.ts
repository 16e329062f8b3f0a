// Small SVG charts without a library: a line chart of one or more series
// over a shared x axis (training curves, utilisation history) and a bar
// chart of named values (usage by department). Each returns a <figure>
// with an accessible title and the numbers' range in text.
const NS = "http://www.w3.org/2000/svg";
const W = 560;
const H = 180;
const PAD = { l: 52, r: 10, t: 10, b: 24 };
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c"];

export interface Series {
  name: string;
  xs: number[];
  ys: number[];
}

function svg(tag: string, attrs: Record<string, string | number>, ...kids: Node[]): SVGElement {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const k of kids) el.appendChild(k);
  return el;
}

function text(x: number, y: number, s: string, anchor = "end"): SVGElement {
  const t = svg("text", { x, y, "text-anchor": anchor, "font-size": 11, fill: "currentColor" });
  t.textContent = s;
  return t;
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0) ? v.toExponential(2) : String(+v.toFixed(3));
}

function range(vs: number[]): [number, number] {
  let lo = Math.min(...vs);
  let hi = Math.max(...vs);
  if (!isFinite(lo)) return [0, 1];
  if (hi === lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  return [lo, hi];
}

function figure(title: string, chart: SVGElement, caption: string): HTMLElement {
  const fig = document.createElement("figure");
  fig.className = "chart";
  chart.setAttribute("role", "img");
  chart.setAttribute("aria-label", `${title}: ${caption}`);
  const cap = document.createElement("figcaption");
  cap.textContent = `${title} — ${caption}`;
  fig.append(chart, cap);
  return fig;
}

/** A line chart of series (one colour each, with a legend). */
export function lineChart(title: string, series: Series[], xLabel: (x: number) => string = fmt): HTMLElement {
  const all = series.filter((s) => s.xs.length);
  const [x0, x1] = range(all.flatMap((s) => s.xs));
  const [y0, y1] = range(all.flatMap((s) => s.ys));
  const px = (x: number) => PAD.l + ((x - x0) / (x1 - x0)) * (W - PAD.l - PAD.r);
  const py = (y: number) => H - PAD.b - ((y - y0) / (y1 - y0)) * (H - PAD.t - PAD.b);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "chart-svg" });
  root.append(
    svg("line", { x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b, stroke: "#888" }),
    svg("line", { x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: H - PAD.b, stroke: "#888" }),
    text(PAD.l - 4, py(y1) + 4, fmt(y1)),
    text(PAD.l - 4, py(y0) + 4, fmt(y0)),
    text(PAD.l, H - 6, xLabel(x0), "start"),
    text(W - PAD.r, H - 6, xLabel(x1)),
  );
  all.forEach((s, i) => {
    const d = s.xs.map((x, k) => `${k ? "L" : "M"}${px(x).toFixed(1)},${py(s.ys[k]).toFixed(1)}`).join("");
    const color = COLORS[i % COLORS.length];
    root.append(svg("path", { d, fill: "none", stroke: color, "stroke-width": 2, "data-series": s.name }));
    root.append(svg("rect", { x: PAD.l + 8 + i * 110, y: PAD.t, width: 10, height: 10, fill: color }));
    root.append(text(PAD.l + 22 + i * 110, PAD.t + 9, s.name, "start"));
  });
  const last = all.map((s) => `${s.name} ${fmt(s.ys[s.ys.length - 1])}`).join(", ");
  return figure(title, root, all.length ? `latest ${last}` : "no data yet");
}

/** A bar chart of named values. */
export function barChart(title: string, bars: { name: string; value: number }[], unit: string): HTMLElement {
  const max = Math.max(1e-9, ...bars.map((b) => b.value));
  const bw = (W - PAD.l - PAD.r) / Math.max(1, bars.length);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "chart-svg" });
  root.append(svg("line", { x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b, stroke: "#888" }));
  bars.forEach((b, i) => {
    const hgt = (b.value / max) * (H - PAD.t - PAD.b);
    const x = PAD.l + i * bw + bw * 0.15;
    root.append(svg("rect", { x, y: H - PAD.b - hgt, width: bw * 0.7, height: hgt, fill: COLORS[0], "data-bar": b.name }));
    root.append(text(x + bw * 0.35, H - 8, b.name, "middle"));
    root.append(text(x + bw * 0.35, H - PAD.b - hgt - 3, fmt(b.value), "middle"));
  });
  return figure(title, root, bars.map((b) => `${b.name} ${fmt(b.value)} ${unit}`).join(", ") || "no data");
}

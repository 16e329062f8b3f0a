// A few lines over the DOM instead of a UI framework: h() builds elements,
// and each page re-renders its own part when its data changes.

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

/** Create element tag with attributes (on* take listeners; value/checked/
 * disabled/selected are set as properties; false/null/undefined are left
 * out) and children (strings become text; arrays are flattened). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v as EventListener);
    } else if (k === "value" || k === "checked" || k === "disabled" || k === "selected") {
      (el as unknown as Record<string, unknown>)[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replace el's children. */
export function mount(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

let uniq = 0;
/** An id unique on the page, for label/aria links. */
export function uid(prefix: string): string {
  uniq += 1;
  return `${prefix}-${uniq}`;
}

/** A labelled form field: <label> then the control (given an id here). */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || uid("f");
  control.id = id;
  const hintEl = hint ? h("span", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** A table: head cells and rows of cells, inside a scrolling box. */
export function table(caption: string, head: string[], rows: Child[][], cls = ""): HTMLElement {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: cls },
      h("caption", { class: "sr-only" }, caption),
      h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))),
      h(
        "tbody",
        null,
        rows.length
          ? rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))
          : h("tr", null, h("td", { colspan: head.length, class: "empty" }, "None")),
      ),
    ),
  );
}

export function badge(text: string, kind: string): HTMLElement {
  return h("span", { class: `badge badge-${kind}` }, text);
}

/** "3m", "2h", "5d" since an RFC 3339 time. */
export function age(ts: string | undefined, now = Date.now()): string {
  if (!ts) return "-";
  const s = Math.max(0, Math.round((now - Date.parse(ts)) / 1000));
  if (s < 90) return `${s}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 129600) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

/** Offer text as a file download. */
export function download(name: string, text: string, type = "text/plain"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

"use strict";

// ---------- small DOM helpers (text only: data never goes in as markup) ----------

function el(tag, attrs, children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = String(v);
      else if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of [].concat(children === undefined ? [] : children)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function clear(node, ...children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

const $ = (id) => document.getElementById(id);

function fmt(n, digits) {
  if (typeof n !== "number" || !isFinite(n)) return "–";
  return n.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 0 : digits });
}

function fmtMs(n) {
  if (typeof n !== "number" || !isFinite(n)) return "–";
  return n < 10 ? n.toFixed(2) + " ms" : n < 1000 ? n.toFixed(1) + " ms" : (n / 1000).toFixed(2) + " s";
}

function fmtBytes(n) {
  if (typeof n !== "number" || !isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function fmtDuration(s) {
  if (typeof s !== "number" || !isFinite(s)) return "–";
  if (s < 60) return s.toFixed(s < 10 ? 2 : 0) + " s";
  const m = Math.floor(s / 60), h = Math.floor(m / 60), d = Math.floor(h / 24);
  if (d > 0) return d + " d " + (h % 24) + " h";
  if (h > 0) return h + " h " + (m % 60) + " min";
  return m + " min " + Math.floor(s % 60) + " s";
}

function spinner(text) {
  return el("div", { class: "panel muted" }, [el("span", { class: "spinner" }), text]);
}

// ---------- the API ----------

const TIMEOUT_MS = 30000;

// ---------- the API key ----------

// The key this tab sends, if any (session storage: gone with the tab).
const KEY_STORE = "kgbox-api-key";

function storedKey() {
  try { return sessionStorage.getItem(KEY_STORE) || ""; } catch (_) { return ""; }
}

function storeKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORE, key);
    else sessionStorage.removeItem(KEY_STORE);
  } catch (_) { /* storage off: the key lasts for this call only */ }
  showKeyButton();
}

// The header's Key button, to change or forget the key: shown once there is one.
function showKeyButton() {
  document.getElementById("key-button").hidden = !storedKey();
}

// One dialog at a time: calls refused together wait for the same answer.
let keyPrompt = null;

// Asks for a key; resolves to true when one was given (or forgotten on
// purpose), false on cancel.
function askForKey(reason) {
  if (keyPrompt) return keyPrompt;
  const dialog = document.getElementById("key-dialog");
  const input = document.getElementById("key-input");
  document.getElementById("key-reason").textContent = reason || "This device answers only requests with an API key.";
  input.value = storedKey();
  keyPrompt = new Promise((resolve) => {
    const form = document.getElementById("key-form");
    const cancel = document.getElementById("key-cancel");
    const done = (given) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.close();
      keyPrompt = null;
      resolve(given);
    };
    const onSubmit = (e) => { e.preventDefault(); storeKey(input.value.trim()); done(true); };
    const onCancel = () => done(false);
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.showModal();
    input.focus();
  });
  return keyPrompt;
}

// Calls the API, with the tab's key when it has one; a 401 for a missing or
// refused key asks for one and tries once more.
async function api(method, path, body, headers) {
  let r = await call(method, path, body, headers);
  const code = r.status === 401 && r.data && r.data.error ? r.data.error.code : "";
  if (code === "missing_key" || code === "invalid_key") {
    if (await askForKey(r.data.error.message)) r = await call(method, path, body, headers);
  }
  return r;
}

// One call. Resolves to {ok, status, data (parsed JSON or null), text}.
async function call(method, path, body, headers) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const init = { method, headers: Object.assign({}, headers || {}), signal: ctl.signal, credentials: "same-origin" };
  const key = storedKey();
  if (key) init.headers["Authorization"] = "Bearer " + key;
  if (body !== undefined) {
    if (typeof body === "string") init.body = body;
    else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  try {
    const r = await fetch(path, init);
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    return { ok: r.ok, status: r.status, statusText: r.statusText, data, text };
  } catch (e) {
    const message = e && e.name === "AbortError"
      ? "no answer within " + TIMEOUT_MS / 1000 + " s"
      : "the server could not be reached (" + (e && e.message ? e.message : e) + ")";
    return { ok: false, status: 0, statusText: "", data: null, text: message, network: true };
  } finally {
    clearTimeout(timer);
  }
}

// A readable box for a failed call: the API's {"error": {code, message, ...}}
// or, for anything else, the status line and the start of the body.
function errorBox(what, r) {
  const err = r.data && typeof r.data === "object" && r.data.error && typeof r.data.error === "object" ? r.data.error : null;
  const box = el("div", { class: "notice error", role: "alert" });
  const status = r.status ? String(r.status) + (r.statusText ? " " + r.statusText : "") : "";
  if (err) {
    box.append(el("span", { class: "code-name", text: err.code || status }));
    box.append(document.createTextNode(err.message || "request failed"));
    if (err.snippet) box.append(el("pre", { text: err.snippet }));
    if (err.query) box.append(el("pre", { text: "query: " + err.query }));
    const names = Array.isArray(err.suggestions) ? err.suggestions : Array.isArray(err.candidates) ? err.candidates : [];
    if (names.length) {
      const entityish = ["entity_not_found", "ambiguous_entity", "unknown_entity"].includes(err.code);
      box.append(el("div", { class: "chips" }, [
        el("span", { class: "muted", text: err.candidates ? "Candidates:" : "Did you mean:" }),
        ...names.map((n) => entityish ? entityLink(String(n), "chip") : el("span", { class: "chip", text: String(n) })),
      ]));
    }
  } else {
    box.append(el("span", { class: "code-name", text: status || "error" }));
    let text = (r.text || "").trim();
    if (text.length > 600) text = text.slice(0, 600) + "…";
    box.append(document.createTextNode(text || (r.status === 405 ? "method not allowed" : "request failed")));
  }
  return el("div", {}, [el("div", { class: "muted", text: what }), box]);
}

function entityHash(name) {
  return "#/entity/" + encodeURIComponent(name);
}

function entityLink(name, cls) {
  return el("a", { href: entityHash(name), class: cls || null, text: name, title: "Open " + name });
}

// A provenance path (a list of [subject, relation, object] triples) as chains:
// a —r1→ b —r2→ c, a new chain wherever a triple does not continue the last.
function pathView(path) {
  const line = el("div", { class: "path" });
  let last = null;
  path.forEach((t, i) => {
    if (!Array.isArray(t) || t.length !== 3) return;
    const [s, r, o] = t.map(String);
    if (last === null || s !== last) {
      if (i > 0) line.append(el("span", { class: "sep", text: "·" }));
      line.append(entityLink(s));
    }
    line.append(" ", el("span", { class: "rel", text: "—" + r + "→" }), " ", entityLink(o));
    last = o;
  });
  return line;
}

function scoreView(score) {
  const s = typeof score === "number" && isFinite(score) ? score : 0;
  const meter = el("span", { class: "meter" }, [el("i")]);
  meter.firstChild.style.width = Math.max(0, Math.min(1, s)) * 100 + "%";
  return el("span", { class: "score", title: "score" }, [meter, s.toFixed(3)]);
}

// Answers of /v1/ask or /v1/query, each with its provenance paths.
function answersView(answers) {
  if (!answers.length) return el("div", { class: "empty", text: "No answers." });
  return el("ol", { class: "answers", id: null }, answers.map((a, i) => {
    const name = String(a.name);
    const head = el("div", { class: "answer-head" }, [
      el("span", { class: "rank", text: String(i + 1) + "." }),
      entityLink(name, "answer-name"),
      scoreView(a.score),
    ]);
    if (typeof a.rerank_score === "number") {
      head.append(el("span", { class: "pill", title: "reranker P(correct)" }, ["rerank ", el("b", { text: a.rerank_score.toFixed(3) })]));
    }
    const paths = Array.isArray(a.paths) ? a.paths : [];
    return el("li", { class: "answer" }, [
      head,
      paths.length ? el("div", { class: "paths" }, paths.map(pathView)) : null,
    ]);
  }));
}

function timingsView(t, keys) {
  if (!t || typeof t !== "object") return null;
  return el("div", { class: "pills" }, keys
    .filter((k) => typeof t[k] === "number" && (k === "total" || t[k] >= 0.005))
    .map((k) => el("span", { class: "pill" }, [k + " ", el("b", { text: fmtMs(t[k]) })])));
}

function metaList(rows) {
  const dl = el("dl", { class: "meta" });
  for (const [k, v] of rows) {
    if (v === null || v === undefined || v === "") continue;
    dl.append(el("dt", { text: k }), el("dd", {}, [v]));
  }
  return dl;
}

// ---------- navigation ----------

const views = ["ask", "query", "entity", "status"];

function route() {
  const h = location.hash.replace(/^#\/?/, "");
  const slash = h.indexOf("/");
  const view = slash < 0 ? h : h.slice(0, slash);
  let arg = slash < 0 ? "" : h.slice(slash + 1);
  try { arg = decodeURIComponent(arg); } catch (_) { /* keep it raw */ }
  return { view: views.includes(view) ? view : "ask", arg };
}

function show(view) {
  for (const v of views) $("view-" + v).hidden = v !== view;
  for (const a of document.querySelectorAll("nav.tabs a")) {
    a.classList.toggle("active", a.dataset.view === view);
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function onRoute() {
  const { view, arg } = route();
  show(view);
  if (view === "entity") {
    document.title = (arg ? arg + " · " : "Entities · ") + "kgbox";
    $("entity-input").value = arg;
    if (arg) await loadEntity(arg);
    else clear($("entity-out"), el("div", { class: "empty", text: "Type an entity name, or follow a link from an answer." }));
  } else {
    document.title = view[0].toUpperCase() + view.slice(1) + " · kgbox";
    if (view === "query") fitQueryInput();
    if (view === "status") await loadStatus();
  }
}

// ---------- Ask ----------

const ASK_EXAMPLES = [
  "who directed [Blade Runner]",
  "who wrote [Blade Runner]",
  "when was [Blade Runner] released",
  "[Ridley Scott] directed which movies",
];

let askSeq = 0;

async function ask(question) {
  question = question.trim();
  if (!question) return;
  const seq = ++askSeq;
  const out = $("ask-out");
  const btn = $("ask-button");
  btn.disabled = true;
  btn.textContent = "Asking…";
  clear(out, spinner("Asking…"));
  const body = { question, top_k: Number($("ask-topk").value) || 5, paths: 3 };
  if ($("ask-executor").value) body.executor = $("ask-executor").value;
  const r = await api("POST", "/v1/ask", body);
  if (seq !== askSeq) return;
  btn.disabled = false;
  btn.textContent = "Ask";
  if (!r.ok || !r.data) {
    clear(out, el("div", { class: "panel" }, [errorBox("POST /v1/ask failed", r)]));
    return;
  }
  const d = r.data;
  const answers = Array.isArray(d.answers) ? d.answers : [];
  // Answers of a repaired query, or a weak match, say so above the list.
  const caveat = answers.length && d.confidence && d.confidence !== "high" && typeof d.caveat === "string" ? d.caveat : null;
  const results = el("div", { class: "panel", id: "ask-results" }, [
    el("h2", {}, ["Answers ", el("span", { class: "muted", text: "(" + answers.length + (typeof d.candidates === "number" ? " of " + d.candidates + " candidates" : "") + ")" })]),
    caveat ? el("div", { class: "notice warn", id: "ask-caveat" }, [el("strong", { text: d.confidence === "repaired" ? "Repaired query, a guess: " : "Low confidence: " }), caveat]) : null,
    answersView(answers),
  ]);
  const query = typeof d.query === "string" ? d.query : "";
  const topic = d.topic && d.topic.name ? d.topic : null;
  const arb = d.arbitration && d.arbitration.method ? String(d.arbitration.method) : null;
  const details = el("div", { class: "panel" }, [
    el("h2", { text: "How it was answered" }),
    metaList([
      ["Query", query ? el("div", {}, [
        el("pre", { class: "code", id: "ask-query", text: query }),
        el("button", { type: "button", class: "ghost", onclick: () => { setQuery("dsl", query); location.hash = "#/query"; runQuery(); }, text: "Open in Query →" }),
      ]) : null],
      ["Topic", topic ? el("span", {}, [entityLink(String(topic.name)), topic.method ? el("span", { class: "muted", text: " (" + topic.method + (typeof topic.probability === "number" ? ", p=" + topic.probability.toFixed(2) : "") + ")" }) : null]) : null],
      ["Planner", d.planner ? String(d.planner) : null],
      ["Executor", d.executor ? String(d.executor) : null],
      ["Arbitration", arb],
      ["Repair", d.repair && Array.isArray(d.repair.edits) && d.repair.edits.length ? d.repair.edits.join("; ") : null],
      ["Timings", timingsView(d.timings_ms, ["link", "plan", "execute", "rerank", "arbitrate", "strategies", "total"])],
    ]),
  ]);
  clear(out, results, details);
}

// ---------- Query ----------

const DSL_EXAMPLES = [
  "\"Blade Runner\" -> directed_by",
  "\"Ridley Scott\" -> directed_by_inv -> release_year",
  "AND(\"Harrison Ford\" -> starred_actors_inv, \"Ridley Scott\" -> directed_by_inv)",
];

const PLACEHOLDERS = {
  dsl: "\"Entity name\" -> relation",
  sparql: "SELECT ?x WHERE { ... }",
};

const LEADS = {
  dsl: "A query in the query language, run by POST /v1/query; the answers come with their provenance and the same query in SPARQL and openCypher.",
  sparql: "A SPARQL query sent to the SPARQL endpoint (POST /sparql, SPARQL 1.1 Protocol); the bindings are shown as a table.",
};

let queryMode = "dsl";
const queryText = { dsl: "", sparql: "" };

function setQuery(mode, text) {
  queryText[queryMode] = $("query-input").value;
  queryMode = mode;
  if (text !== undefined) queryText[mode] = text;
  $("query-input").value = queryText[mode];
  $("query-input").placeholder = PLACEHOLDERS[mode];
  fitQueryInput();
  $("mode-dsl").classList.toggle("on", mode === "dsl");
  $("mode-sparql").classList.toggle("on", mode === "sparql");
  $("query-lead").textContent = LEADS[mode];
  for (const n of document.querySelectorAll(".dsl-only")) n.hidden = mode !== "dsl";
  drawQueryExamples();
  // A SPARQL box starts as the SPARQL form of the DSL query: the bundle's
  // own IRIs, whatever they are.
  if (mode === "sparql" && !queryText.sparql.trim() && queryText.dsl.trim()) sparqlFromDsl();
}

// Grows the query box with its text (up to a limit; it scrolls beyond).
function fitQueryInput() {
  const ta = $("query-input");
  ta.style.height = "auto";
  ta.style.height = Math.min(Math.max(ta.scrollHeight + 2, 92), 360) + "px";
}

function drawQueryExamples() {
  const chips = queryMode === "dsl"
    ? (demo ? DSL_EXAMPLES : []).map((q) =>
      el("button", { type: "button", class: "chip mono", text: q, onclick: () => { $("query-input").value = q; fitQueryInput(); runQuery(); } }))
    : [el("button", { type: "button", class: "chip", text: "The DSL query as SPARQL", onclick: sparqlFromDsl })];
  clear($("query-examples"), ...chips);
}

// Puts the SPARQL rendering of the DSL box's query (POST /v1/query with
// render "sparql") into the SPARQL box.
async function sparqlFromDsl() {
  const dsl = queryText.dsl.trim();
  if (!dsl) return;
  const r = await api("POST", "/v1/query", { query: dsl, render: "sparql", top_k: 1, paths: false });
  if (queryMode !== "sparql") return;
  if (r.ok && r.data && r.data.rendered && typeof r.data.rendered.text === "string") {
    $("query-input").value = r.data.rendered.text;
    queryText.sparql = r.data.rendered.text;
    fitQueryInput();
  } else {
    clear($("query-out"), el("div", { class: "panel" }, [errorBox("The DSL query could not be written as SPARQL", r)]));
  }
}

let querySeq = 0;

async function runQuery() {
  const text = $("query-input").value;
  if (!text.trim()) return;
  const seq = ++querySeq;
  const out = $("query-out");
  const btn = $("query-button");
  btn.disabled = true;
  clear(out, spinner("Running…"));
  try {
    if (queryMode === "sparql") await runSparql(text, out, seq);
    else await runDsl(text, out, seq);
  } finally {
    if (seq === querySeq) btn.disabled = false;
  }
}

async function runDsl(text, out, seq) {
  const base = { query: text, top_k: Number($("query-topk").value) || 10 };
  if ($("query-executor").value) base.executor = $("query-executor").value;
  // The answers with the query rendered as SPARQL, and the openCypher
  // rendering alongside; a query that cannot be rendered still runs.
  let [main, cypher] = await Promise.all([
    api("POST", "/v1/query", Object.assign({ render: "sparql" }, base)),
    api("POST", "/v1/query", Object.assign({}, base, { render: "cypher", top_k: 1, paths: false })),
  ]);
  let sparqlNote = null;
  if (!main.ok && main.data && main.data.error && main.data.error.code === "cannot_render") {
    sparqlNote = main.data.error.message;
    main = await api("POST", "/v1/query", base);
  }
  if (seq !== querySeq) return;
  if (!main.ok || !main.data) {
    clear(out, el("div", { class: "panel" }, [errorBox("POST /v1/query failed", main)]));
    return;
  }
  const d = main.data;
  const answers = Array.isArray(d.answers) ? d.answers : [];
  const rendered = (r, note) => r && r.text ? el("pre", { class: "code", text: String(r.text) }) : el("div", { class: "empty", text: note || "not available" });
  const cypherRendered = cypher.ok && cypher.data ? cypher.data.rendered : null;
  const cypherNote = !cypher.ok && cypher.data && cypher.data.error ? cypher.data.error.message : null;
  const repair = d.repair && d.repair.repaired ? d.repair : null;
  clear(out,
    el("div", { class: "panel", id: "query-results" }, [
      el("h2", {}, ["Answers ", el("span", { class: "muted", text: "(" + answers.length + " of " + fmt(d.total) + ")" })]),
      repair ? el("div", { class: "notice info" }, ["Repaired (" + String(repair.kind) + "): ", el("code", { text: String(repair.repaired) })]) : null,
      answersView(answers),
    ]),
    el("div", { class: "panel" }, [
      el("h2", { text: "Run" }),
      metaList([
        ["Executor", d.executor ? String(d.executor) : null],
        ["Edge visits", fmt(d.edge_visits)],
        ["Timings", timingsView(d.timings_ms, ["parse", "bind", "execute", "repair", "total"])],
      ]),
      el("div", { class: "grid2" }, [
        el("div", {}, [el("h3", { text: "SPARQL" }), rendered(d.rendered, sparqlNote),
          d.rendered && d.rendered.text ? el("button", { type: "button", class: "ghost", text: "Run on the SPARQL endpoint →", onclick: () => { setQuery("sparql", String(d.rendered.text)); runQuery(); } }) : null]),
        el("div", {}, [el("h3", { text: "openCypher" }), rendered(cypherRendered, cypherNote)]),
      ]),
    ]));
}

function sparqlTerm(t) {
  if (!t || typeof t !== "object") return el("span", { class: "muted", text: "" });
  const v = String(t.value === undefined ? "" : t.value);
  if (t.type === "uri") {
    // Entity IRIs end in /e/<percent-encoded name> (docs/query-language.md).
    const m = /\/e\/([^/?#]+)$/.exec(v);
    let name = null;
    if (m) { try { name = decodeURIComponent(m[1]); } catch (_) { name = null; } }
    const iri = el("span", { class: "mono", text: "<" + v + ">" });
    return name ? el("a", { href: entityHash(name), title: v, text: name }) : iri;
  }
  if (t.type === "bnode") return el("span", { class: "mono", text: "_:" + v });
  const extra = t["xml:lang"] ? "@" + t["xml:lang"] : "";
  return el("span", { title: t.datatype ? String(t.datatype) : null }, [v, extra ? el("span", { class: "muted", text: extra }) : null]);
}

async function runSparql(text, out, seq) {
  const t0 = performance.now();
  const r = await api("POST", "/sparql", text, {
    "Content-Type": "application/sparql-query",
    "Accept": "application/sparql-results+json",
  });
  if (seq !== querySeq) return;
  const ms = performance.now() - t0;
  if (!r.ok) {
    clear(out, el("div", { class: "panel" }, [errorBox("POST /sparql failed", r)]));
    return;
  }
  const d = r.data;
  if (!d || typeof d !== "object") {
    clear(out, el("div", { class: "panel" }, [errorBox("POST /sparql did not answer SPARQL results JSON", r)]));
    return;
  }
  if (typeof d.boolean === "boolean") {
    clear(out, el("div", { class: "panel", id: "query-results" }, [
      el("h2", { text: "ASK" }), el("div", { class: "card" }, [el("div", { class: "v", text: d.boolean ? "true" : "false" })]),
      el("p", { class: "muted", text: fmtMs(ms) }),
    ]));
    return;
  }
  const vars = d.head && Array.isArray(d.head.vars) ? d.head.vars.map(String) : [];
  const rows = d.results && Array.isArray(d.results.bindings) ? d.results.bindings : [];
  const table = el("table", {}, [
    el("thead", {}, [el("tr", {}, [el("th", { class: "num", text: "#" }), ...vars.map((v) => el("th", { text: "?" + v }))])]),
    el("tbody", {}, rows.map((b, i) => el("tr", {}, [
      el("td", { class: "num muted", text: String(i + 1) }),
      ...vars.map((v) => el("td", {}, [sparqlTerm(b ? b[v] : null)])),
    ]))),
  ]);
  clear(out, el("div", { class: "panel", id: "query-results" }, [
    el("h2", {}, ["Bindings ", el("span", { class: "muted", text: "(" + rows.length + (rows.length === 1 ? " row, " : " rows, ") + fmtMs(ms) + ")" })]),
    rows.length ? el("div", { class: "table-wrap" }, [table]) : el("div", { class: "empty", text: "No solutions." }),
  ]));
}

// ---------- Entities ----------

const EDGE_PAGE = 200;
let entitySeq = 0;

function groupEdges(edges) {
  const groups = new Map();
  for (const e of edges) {
    const rel = String(e.relation);
    if (!groups.has(rel)) groups.set(rel, []);
    groups.get(rel).push(String(e.entity));
  }
  return groups;
}

// One direction's edges grouped by relation, with a button for the next page.
function edgeSection(name, dir, page) {
  const wrap = el("div", { class: "panel edges", id: "edges-" + dir });
  const title = dir === "out" ? "Outgoing" : "Incoming";
  const edges = [];
  const body = el("div");
  const more = el("div");
  const heading = el("h2");
  function draw(p) {
    heading.textContent = title + " ";
    heading.append(el("span", { class: "muted", text: "(" + fmt(p.total) + ")" }));
    const groups = groupEdges(edges);
    if (!groups.size) {
      clear(body, el("div", { class: "empty", text: dir === "out" ? "No outgoing edges." : "No incoming edges." }));
    } else {
      clear(body, ...[...groups.entries()]
        .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
        .map(([rel, names]) => el("div", { class: "edge-group", "data-relation": rel }, [
          el("div", { class: "edge-rel" }, [
            dir === "out" ? name + " —" + rel + "→" : "—" + rel + "→ " + name,
            el("span", { class: "count", text: String(names.length) }),
          ]),
          el("div", { class: "neighbours" }, names.map((n) => entityLink(n))),
        ])));
    }
    if (typeof p.next_offset === "number") {
      clear(more, el("button", { type: "button", class: "ghost", text: "Show more (" + fmt(p.total - edges.length) + " left)", onclick: async (ev) => {
        ev.target.disabled = true;
        const r = await api("GET", "/v1/entities/" + encodeURIComponent(name) + "?direction=" + dir + "&limit=" + EDGE_PAGE + "&offset=" + p.next_offset);
        const next = r.ok && r.data ? (dir === "out" ? r.data.outgoing : r.data.incoming) : null;
        if (!next) { clear(more, errorBox("GET /v1/entities failed", r)); return; }
        edges.push(...(Array.isArray(next.edges) ? next.edges : []));
        draw(next);
      } }));
    } else {
      clear(more);
    }
  }
  edges.push(...(Array.isArray(page.edges) ? page.edges : []));
  draw(page);
  wrap.append(heading, body, more);
  return wrap;
}

async function loadEntity(name) {
  const seq = ++entitySeq;
  const out = $("entity-out");
  clear(out, spinner("Loading " + name + "…"));
  const r = await api("GET", "/v1/entities/" + encodeURIComponent(name) + "?limit=" + EDGE_PAGE);
  if (seq !== entitySeq) return;
  if (!r.ok || !r.data) {
    clear(out, el("div", { class: "panel" }, [errorBox("GET /v1/entities/" + name + " failed", r)]));
    return;
  }
  const d = r.data;
  const canonical = String(d.name);
  document.title = canonical + " · kgbox";
  const aliases = Array.isArray(d.aliases) ? d.aliases.map(String) : [];
  // A direction without edges is left out, unless neither has any.
  const pages = [["out", d.outgoing], ["in", d.incoming]]
    .filter(([, p]) => p && typeof p === "object" && p.total > 0);
  const sections = pages.length
    ? pages.map(([dir, p]) => edgeSection(canonical, dir, p))
    : [el("div", { class: "panel empty", text: "This entity has no edges." })];
  clear(out,
    el("div", { class: "panel", id: "entity-head" }, [
      el("h1", { class: "entity-title", text: canonical }),
      el("div", { class: "entity-sub" }, [
        "#" + d.id,
        aliases.length ? " · also known as " + aliases.join(", ") : "",
      ]),
      el("div", { class: "chips" }, [
        el("button", { type: "button", class: "chip", text: "Ask about it", onclick: () => { $("ask-input").value = "[" + canonical + "]"; location.hash = "#/ask"; $("ask-input").focus(); } }),
      ]),
    ]),
    ...sections);
}

// ---------- Status ----------

// Prometheus text: [{name, labels, value}] for every sample line.
function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (m) out.push({ name: m[1], labels: m[2] || "", value: Number(m[3]) });
  }
  return out;
}

function metricSum(samples, name, labelTest) {
  let sum = null;
  for (const s of samples) {
    if (s.name !== name || (labelTest && !labelTest(s.labels))) continue;
    sum = (sum || 0) + s.value;
  }
  return sum;
}

function card(k, v, id) {
  return el("div", { class: "card", id: id || null }, [el("div", { class: "k", text: k }), el("div", { class: "v" }, [v])]);
}

let statusSeq = 0;

async function loadStatus() {
  const seq = ++statusSeq;
  const out = $("status-out");
  if (!out.firstChild) clear(out, spinner("Loading…"));
  const [bundle, ready, status, metrics] = await Promise.all([
    api("GET", "/v1/bundle"), api("GET", "/readyz"), api("GET", "/v1/status"), api("GET", "/metrics"),
  ]);
  if (seq !== statusSeq) return;
  const parts = [];
  const isReady = ready.ok && ready.text.trim() === "ready";
  const st = status.ok && status.data ? status.data : null;
  const samples = metrics.ok ? parseMetrics(metrics.text) : [];
  const healthy = st && st.health === "good";
  parts.push(el("div", { class: "cards", id: "status-cards" }, [
    card("Ready", el("span", {}, [el("span", { class: "status-dot " + (isReady ? "ok" : "bad") }), isReady ? "ready" : (ready.text.trim() || "not ready")]), "card-ready"),
    card("Health", st ? el("span", {}, [el("span", { class: "status-dot " + (healthy ? "ok" : st.health === "bad" ? "bad" : "") }), String(st.health)]) : "–"),
    card("Uptime", fmtDuration(st && typeof st.uptime_s === "number" ? st.uptime_s : metricSum(samples, "kgbox_uptime_seconds"))),
    card("Requests", fmt(metricSum(samples, "kgbox_http_requests_total"))),
    card("Server errors", fmt(metricSum(samples, "kgbox_http_requests_total", (l) => /status="5/.test(l)) || 0)),
    card("Memory (RSS)", fmtBytes(metricSum(samples, "kgbox_process_resident_memory_bytes"))),
  ]));
  if (bundle.ok && bundle.data && bundle.data.manifest) {
    const b = bundle.data, m = b.manifest, s = m.stats || {};
    parts.push(el("div", { class: "grid2" }, [
      el("div", { class: "panel", id: "bundle-panel" }, [
        el("h2", { text: "Bundle" }),
        metaList([
          ["Name", String(m.name)],
          ["Version", String(m.version)],
          ["Source", String(b.source)],
          ["Created", m.created ? String(m.created) : null],
          ["Generator", m.generator ? String(m.generator) : null],
          ["Signing key", b.key_id ? el("span", { class: "mono", text: String(b.key_id) }) : null],
          ["Image", fmtBytes(b.image_bytes)],
          ["Models", Array.isArray(m.models) && m.models.length ? m.models.map((x) => String(x.name) + (x.role ? " (" + x.role + ")" : "")).join(", ") : "none"],
        ]),
      ]),
      el("div", { class: "panel" }, [
        el("h2", { text: "Graph" }),
        metaList([
          ["Entities", fmt(s.entities)],
          ["Relations", fmt(s.relations)],
          ["Triples", fmt(s.triples)],
          ["Aliases", fmt(s.aliases)],
        ]),
        el("h3", { text: "Device" }),
        metaList([
          ["kgbox", st ? String(st.kgbox_version) : null],
          ["Slot", st ? (st.slot ? String(st.slot) : "none (built-in demo)") : null],
          ["Startup", fmtDuration(metricSum(samples, "kgbox_startup_seconds"))],
          ["LLM calls", fmt(metricSum(samples, "kgbox_llm_calls_total"))],
          ["Last deploy", st && st.last_deploy ? String(st.last_deploy.outcome || "") + (st.last_deploy.bundle ? " " + st.last_deploy.bundle.name + " " + st.last_deploy.bundle.version : "") : null],
        ]),
      ]),
    ]));
    const sections = Array.isArray(b.sections) ? b.sections : [];
    if (sections.length) {
      parts.push(el("div", { class: "panel" }, [
        el("h2", { text: "Sections" }),
        el("div", { class: "table-wrap" }, [el("table", {}, [
          el("thead", {}, [el("tr", {}, [el("th", { text: "Name" }), el("th", { class: "num", text: "Raw" }), el("th", { class: "num", text: "Stored" })])]),
          el("tbody", {}, sections.map((x) => el("tr", {}, [
            el("td", { class: "mono" }, [String(x.name), x.required ? "" : el("span", { class: "muted", text: " (optional)" })]),
            el("td", { class: "num", text: fmtBytes(x.raw_bytes) }),
            el("td", { class: "num", text: fmtBytes(x.stored_bytes) }),
          ]))),
        ])]),
      ]));
    }
  } else {
    parts.push(el("div", { class: "panel" }, [errorBox("GET /v1/bundle failed", bundle)]));
  }
  if (!status.ok) parts.push(el("div", { class: "panel" }, [errorBox("GET /v1/status failed", status)]));
  if (!metrics.ok) parts.push(el("div", { class: "panel" }, [errorBox("GET /metrics failed", metrics)]));
  parts.push(el("div", { class: "chips" }, [el("button", { type: "button", class: "ghost", text: "Refresh", onclick: loadStatus })]));
  clear(out, ...parts);
}

// The examples name entities of the built-in demo bundle: they are offered
// only while it is served.
let demo = false;

function drawExamples() {
  $("ask-input").placeholder = demo ? ASK_EXAMPLES[0] : "Ask a question; put entity names in [brackets]";
  clear($("ask-examples"), ...(demo ? [el("span", { class: "muted", text: "Try:" }), ...ASK_EXAMPLES.map((q) =>
    el("button", { type: "button", class: "chip", text: q, onclick: () => { $("ask-input").value = q; ask(q); } }))] : []));
  if (demo && queryMode === "dsl" && !$("query-input").value.trim()) $("query-input").value = DSL_EXAMPLES[0];
  drawQueryExamples();
}

async function loadBadge() {
  const r = await api("GET", "/v1/bundle");
  const badge = $("bundle-badge");
  demo = Boolean(r.ok && r.data && r.data.source === "demo");
  drawExamples();
  if (r.ok && r.data && r.data.manifest) {
    const m = r.data.manifest;
    badge.textContent = String(m.name) + " " + String(m.version) + (r.data.source === "demo" ? " · demo" : "");
    badge.title = "The bundle being served (" + String(r.data.source) + ")";
    badge.classList.toggle("demo", r.data.source === "demo");
  } else {
    badge.textContent = "bundle unavailable";
  }
}

// ---------- wiring ----------

$("ask-form").addEventListener("submit", (e) => { e.preventDefault(); ask($("ask-input").value); });
$("query-form").addEventListener("submit", (e) => { e.preventDefault(); runQuery(); });
$("query-input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runQuery(); }
});
$("query-input").addEventListener("input", fitQueryInput);
$("mode-dsl").addEventListener("click", () => setQuery("dsl"));
$("mode-sparql").addEventListener("click", () => setQuery("sparql"));
$("entity-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("entity-input").value.trim();
  if (name) location.hash = entityHash(name);
});
$("key-button").addEventListener("click", async () => {
  if (await askForKey("The API key this tab sends (empty: none).")) { loadBadge(); onRoute(); }
});
window.addEventListener("hashchange", onRoute);
showKeyButton();
setQuery("dsl");
loadBadge();
onRoute();

// The page of mcp-memory: reads /api/ and draws it. Every text from the server is put in the page
// with textContent or as a text node, never as HTML: memory content is whatever an agent stored.
"use strict";

const TOKEN_KEY = "mcp-memory-token";
const params = new URLSearchParams(location.search);
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function link(query, text, attrs) {  // a same-page address: "?" + parameters, never another scheme
  return el("a", { href: "?" + new URLSearchParams(query), text, ...(attrs || {}) });
}

// What a session name holds that cannot be seen: spaces other than one between two visible
// characters (a trailing space, two in a row), other spaces, joiners and direction marks, controls,
// variation selectors, fillers, unassigned and private-use code points.
const UNSEEN = /^[\s\p{Cc}\p{Cf}\p{Z}\p{Co}\p{Cn}\p{Cs}\uFE00-\uFE0F\u{E0100}-\u{E01EF}\u115F\u1160\u3164\uFFA0\u2800]$/u;

// A session name as the page shows it: each unseen character as its escape (\u0020, \u200b) in a
// <mark> titled with its code point, so that two sessions that differ only there never look alike.
function shownName(name) {
  const chars = Array.from(name), parts = [];
  let plain = "";
  chars.forEach((ch, i) => {
    const inner = ch === " " && i > 0 && i < chars.length - 1 && chars[i - 1] !== " " && chars[i + 1] !== " ";
    if (inner || !UNSEEN.test(ch)) { plain += ch; return; }
    if (plain) { parts.push(plain); plain = ""; }
    const hex = ch.codePointAt(0).toString(16);
    parts.push(el("mark", { class: "unseen", title: "U+" + hex.toUpperCase().padStart(4, "0"),
                            text: hex.length > 4 ? `\\u{${hex}}` : "\\u" + hex.padStart(4, "0") }));
  });
  if (plain) parts.push(plain);
  return parts;
}

function sessionLink(query, session, attrs) {
  const anchor = link(query, "", attrs);
  anchor.append(...shownName(session));
  return anchor;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, query) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  let reply;
  try {
    reply = await fetch(path + "?" + new URLSearchParams(query), { headers, cache: "no-store", credentials: "omit" });
  } catch (error) {
    throw new ApiError(0, token ? "the request failed (is the token plain text?)" : "the server did not answer");
  }
  let body = null;
  try { body = await reply.json(); } catch (error) { body = null; }
  if (!reply.ok) {
    const message = body && (body.error_description || body.error);
    throw new ApiError(reply.status, `${reply.status}: ${message || reply.statusText}`);
  }
  if (token) $("forget").hidden = false;  // a token the server accepted: offer to forget it
  return body;
}

function ms(value) { return typeof value === "number" ? value.toFixed(1) + " ms" : "–"; }
function when(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("+00:00", " UTC") : ""; }

function fail(where, error) {
  where.replaceChildren(el("p", { class: "error", role: "alert", text: error.message }));
}

function needToken(error) {
  if (!(error instanceof ApiError) || error.status !== 401) return false;
  const stored = sessionStorage.getItem(TOKEN_KEY) !== null;
  $("token-form").hidden = false;
  $("token-note").textContent = stored
    ? "The server refused this token (401). Paste another; it is kept in this tab's session storage only."
    : "This server needs a bearer token. It is kept in this tab's session storage only, and sent as Authorization: Bearer.";
  $("view").replaceChildren(el("p", { class: "note", text: "Nothing is shown without a token." }));
  $("sessions").replaceChildren();
  return true;
}

function setupToken() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token); else sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  $("forget").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); });
}

async function renderSessions(current) {
  const nav = $("sessions");
  const list = el("ul");
  nav.replaceChildren(el("h2", { text: "Sessions" }), list);
  let after = "";
  const more = el("button", { type: "button", text: "More sessions" });
  async function page() {
    const data = await api("/api/sessions", { after, limit: 200 });
    for (const item of data.sessions) {
      const here = item.session === current;
      list.append(el("li", { class: here ? "current" : null },
        sessionLink({ session: item.session }, item.session, { "aria-current": here ? "page" : null }),
        el("span", { class: "count", text: String(item.memories) })));
    }
    if (data.sessions.length === 0 && after === "") list.append(el("li", { class: "note", text: "No sessions yet." }));
    after = data.next;
    if (after) nav.append(more); else more.remove();
  }
  more.addEventListener("click", () => page().catch((error) => fail(nav, error)));
  await page();
}

function searchForm(session, query) {
  return el("form", { class: "search", action: "/", method: "get", role: "search" },
    el("input", { type: "hidden", name: "session", value: session }),
    el("input", { type: "search", name: "q", value: query || "", placeholder: "Search this session…",
                  "aria-label": "Search this session", required: true }),
    el("button", { type: "submit", text: "Search" }));
}

function memoryRow(memory) {
  return el("li", { class: "memory" },
    el("div", { class: "content", text: memory.content }),
    el("div", { class: "meta" },
      el("span", { text: when(memory.occurred_at) }),
      el("code", { text: memory.memory_id }),
      memory.superseded_by ? el("span", { class: "badge", text: "superseded by " + memory.superseded_by.slice(0, 8) }) : null,
      memory.importance !== null && memory.importance !== undefined
        ? el("span", { text: "importance " + memory.importance }) : null,
      memory.metadata && Object.keys(memory.metadata).length
        ? el("code", { class: "metadata", text: JSON.stringify(memory.metadata) }) : null));
}

function auditLine(session, row) {
  const d = row.detail || {};
  const what = row.kind === "recall" ? `“${d.query || ""}”` : row.kind === "delete" ? (d.memory_id || "")
    : row.kind === "delete_session" ? `${d.count} memories` : "";
  const total = d.latency_ms ? ms(d.latency_ms.total) : "";
  const refused = d.answerable === false ? el("span", { class: "badge refused", text: "refused" }) : null;
  return el("li", {}, link({ session, audit: row.audit_id }, `#${row.audit_id} ${row.kind}`),
    " ", el("span", { class: "what", text: what }), " ", refused, el("span", { class: "meta", text: ` ${total} · ${when(row.created_at)}` }));
}

async function renderSession(session, cursor) {
  const view = $("view");
  const memories = el("section", { id: "memories" }, el("h2", { text: "Memories, newest first" }));
  const audits = el("section", { id: "audits" }, el("h2", { text: "Recent audits" }));
  view.replaceChildren(el("h1", { class: "session" }, ...shownName(session)), searchForm(session), el("div", { class: "columns" }, memories, audits));
  const [page, trail] = await Promise.all([
    api("/api/memories", cursor ? { session, cursor, limit: 50 } : { session, limit: 50 }),
    api("/api/audits", { session, limit: 20 }),
  ]);
  const list = el("ol", { class: "memories" });
  page.memories.forEach((memory) => list.append(memoryRow(memory)));
  if (page.memories.length === 0) list.append(el("li", { class: "note", text: "No memories here." }));
  const pager = el("p", { class: "pager" },
    cursor ? link({ session }, "← Newest") : null, " ",
    page.next ? link({ session, cursor: page.next }, "Older →", { rel: "next" }) : null);
  memories.append(list, pager);
  const rows = el("ul", { class: "audits" });
  trail.audits.forEach((row) => rows.append(auditLine(session, row)));
  if (trail.audits.length === 0) rows.append(el("li", { class: "note", text: "No audit rows yet." }));
  audits.append(rows);
}

const STAGES = ["plan", "embed", "search", "fuse", "rerank", "supersede", "answer"];

function timesTable(latency) {  // in pipeline order (the database returns the keys sorted otherwise)
  const table = el("table", { class: "times" }, el("caption", { text: "Time per stage" }));
  const order = (name) => (name === "total" ? 99 : STAGES.includes(name) ? STAGES.indexOf(name) : 50);
  const entries = Object.entries(latency || {}).sort((a, b) => order(a[0]) - order(b[0]));
  for (const [stage, value] of entries) {
    table.append(el("tr", { class: stage === "total" ? "total" : null }, el("th", { text: stage }), el("td", { text: ms(value) })));
  }
  return table;
}

function foundBy(found) {
  return el("span", { class: "lists" }, ...found.map((hit) => el("span", { class: "chip", text: `${hit.list} #${hit.rank}` })));
}

async function renderSearch(session, query) {
  const view = $("view");
  view.replaceChildren(el("h1", { class: "session" }, sessionLink({ session }, session)), searchForm(session, query),
    el("p", { class: "note", text: "Searching…" }));
  const data = await api("/api/search", { session, q: query });
  const lists = Object.entries(data.lists).map(([name, n]) => `${name} (${n})`).join(", ");
  const table = el("table", { class: "results" },
    el("thead", {}, el("tr", {}, ...["#", "score", "memory", "found by"].map((h) => el("th", { text: h })))));
  const body = el("tbody");
  data.memories.forEach((memory, index) => body.append(el("tr", {},
    el("td", { text: String(index + 1) }),
    el("td", { class: "score", text: memory.score.toFixed(4) }),
    el("td", {}, el("div", { class: "content", text: memory.content }),
      el("div", { class: "meta", text: when(memory.occurred_at) + (memory.superseded_by ? " · superseded" : "") })),
    el("td", {}, foundBy(memory.found_by)))));
  table.append(body);
  view.replaceChildren(el("h1", { class: "session" }, sessionLink({ session }, session)), searchForm(session, query),
    el("p", { class: "summary", text: `${data.memories.length} result${data.memories.length === 1 ? "" : "s"} for “${data.query}” · candidate lists: ${lists || "none"}` }),
    el("p", { class: "note", text: "Same recall pipeline as recall_memory, run without the LLM and without writing an audit row." }),
    data.memories.length ? table : el("p", { class: "note", text: "Nothing found." }),
    timesTable(data.latency_ms));
}

function preview(memories, id) {
  const found = memories[id];
  return found ? found.content : "(deleted since)";
}

function rankedList(memories, ids, scores) {
  if (ids.length === 0) return el("p", { class: "note", text: "None." });
  const list = el("ol", { class: "ranked" });
  ids.forEach((id, index) => list.append(el("li", {},
    scores ? el("span", { class: "score", text: scores[index].toFixed(4) + " " }) : null,
    el("span", { class: "content", text: preview(memories, id) }), " ", el("code", { text: id.slice(0, 8) }))));
  return list;
}

function section(title, ...children) {
  return el("section", { class: "part" }, el("h2", { text: title }), ...children);
}

async function renderAudit(session, auditId) {
  const view = $("view");
  const data = await api("/api/audit", { session, id: auditId });
  const row = data.audit, d = row.detail, memories = data.memories;
  const parts = [el("h1", { class: "session" }, sessionLink({ session }, session)),
    el("h2", { class: "audit-title", text: `Audit #${row.audit_id} · ${row.kind} · ${when(row.created_at)}` })];
  if (row.kind !== "recall") {
    parts.push(el("pre", { class: "detail", text: JSON.stringify(d, null, 2) }));
    view.replaceChildren(...parts);
    return;
  }
  const rewrites = (d.queries || []).filter((q) => q !== d.query);
  parts.push(section("Query", el("p", { class: "query", text: d.query }),
    el("p", { class: "note", text: rewrites.length ? "Rewritten by the planner as:" : "No rewrites." }),
    rewrites.length ? el("ul", { class: "rewrites" }, ...rewrites.map((q) => el("li", { text: q }))) : null,
    d.time_window ? el("p", { text: `Time window: ${d.time_window.start || "…"} – ${d.time_window.end || "…"}` }) : null,
    d.plan_notes && d.plan_notes.length ? el("p", { class: "note", text: "Planner: " + d.plan_notes.join("; ") }) : null));
  const answered = d.answerable === false || (d.answer !== null && d.answer !== undefined);
  const verdict = d.answerable === false ? el("p", { class: "refusal", text: "Refused: " + (d.answer || "") })
    : answered ? el("p", { class: "answer", text: d.answer })
    : el("p", { class: "note", text: `No answer (${d.answer_note || "no answer model"}): the top memories were returned.` });
  // Without an answer the note is the reason, said once in the verdict.
  parts.push(section("Answer", verdict, answered && d.answer_note ? el("p", { class: "note", text: d.answer_note }) : null));
  parts.push(section(d.answer !== null && d.answer !== undefined ? "Cited memories" : "Returned memories",
    rankedList(memories, d.selected || [])));
  parts.push(timesTable(d.latency_ms));
  const fused = d.fused || [];
  parts.push(section("Fused ranking", rankedList(memories, fused.map((f) => f.memory_id), fused.map((f) => f.score))));
  const lists = el("div", { class: "candidates" });
  for (const [name, ids] of Object.entries(d.candidates || {})) {
    lists.append(el("details", { open: true }, el("summary", { text: `${name} (${ids.length})` }), rankedList(memories, ids)));
  }
  parts.push(section("Candidate lists, in rank order", lists));
  const rest = {};
  for (const key of ["top_k", "embed_note", "rerank_note", "dropped_citations", "truncated", "omitted_memory_ids", "supersession"]) {
    if (d[key] !== undefined) rest[key] = d[key];
  }
  parts.push(section("Also recorded", el("pre", { class: "detail", text: JSON.stringify(rest, null, 2) })));
  view.replaceChildren(...parts);
}

async function main() {
  setupToken();
  const session = params.get("session");
  try {
    await renderSessions(session);
  } catch (error) {
    if (needToken(error)) return;
    fail($("sessions"), error);
  }
  const view = $("view");
  if (session === null) {
    view.replaceChildren(el("p", { class: "note", text: "Choose a session." }));
    return;
  }
  try {
    if (params.has("audit")) await renderAudit(session, params.get("audit"));
    else if (params.has("q")) await renderSearch(session, params.get("q"));
    else await renderSession(session, params.get("cursor"));
  } catch (error) {
    if (!needToken(error)) fail(view, error);
  }
}

main();

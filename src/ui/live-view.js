// @ts-check
// The live view: reads GET /v1/pool/events (server-sent events, behind the
// bearer token) with fetch, since EventSource cannot send a header, and draws
// the pool. Every string of the stream goes into the page as text
// (textContent, attributes), never as markup. The token is kept in
// sessionStorage only: it is gone when the tab closes. It comes from the form,
// or from a link's fragment (`/ui/#token=…`), which the page removes at once.
//
// A classic script, not a module: a browser fetches module scripts with an
// `Origin` header, which the server's browser guard refuses.
//
// Type-checked (tsconfig.ui.json, in `npm run typecheck`) against the
// stream's frame types, which the server declares in
// src/server/live-view/pool-event-frames.ts.
//
// Longer than the house's ~400 lines: a classic script cannot import its
// parts (a second script would share this one's globals, which is no
// separation either), and a fifth of its lines are the JSDoc types the
// type-check reads.

/** @typedef {import("../server/live-view/pool-event-frames.js").PoolEventFrame} PoolEventFrame */
/** @typedef {import("../server/live-view/pool-event-frames.js").PoolCallRecord} PoolCallRecord */
/** @typedef {import("../server/live-view/pool-event-frames.js").PoolSnapshotFrame} PoolSnapshotFrame */
/** @typedef {import("../server/live-view/pool-event-frames.js").PoolThreadView} PoolThreadView */
/** @typedef {import("../server/live-view/pool-event-frames.js").PoolToolView} PoolToolView */
/** @typedef {import("../server/live-view/pool-event-frames.js").PoolFaultView} PoolFaultView */
/** @typedef {{ element: HTMLElement, wait: HTMLElement, record: PoolCallRecord }} Bar */
/** @typedef {{ element: HTMLElement, state: HTMLElement, call: HTMLElement, track: HTMLElement, bars: Map<string, Bar> }} Lane */
/** @typedef {{ label: string, waiting: number, capped: number, running: number, longestWaitMs: number, ended: number, errors: number, lastSeen: number }} SessionRow */

const tokenKey = "toolpool-token";
/** Milliseconds of history the timeline keeps; it shows the last `view.windowMs` of them. */
const keptMs = 300_000;
/** Bars kept per lane, at most. */
const barsPerLane = 200;
/** Sessions the table remembers, at most. */
const sessionsKept = 50;

/**
 * An element of the page, by its id (the page has every id this script uses).
 * @param {string} id
 * @returns {HTMLElement}
 */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/**
 * The body of a table of the page, by the table's id.
 * @param {string} id
 * @returns {HTMLTableSectionElement}
 */
const $tbody = (id) => /** @type {HTMLTableSectionElement} */ (/** @type {HTMLTableElement} */ ($(id)).tBodies[0]);
/**
 * An input or select of the page, by its id.
 * @param {string} id
 * @returns {HTMLInputElement | HTMLSelectElement}
 */
const $field = (id) => /** @type {HTMLInputElement | HTMLSelectElement} */ ($(id));

/**
 * @type {{
 *   reading: AbortController | undefined,
 *   offsetMs: number,
 *   lanes: Map<string, Lane>,
 *   groups: Map<string, HTMLElement>,
 *   sessions: Map<string, SessionRow>,
 *   dropped: number,
 *   windowMs: number,
 * }}
 */
const view = {
  /** Aborts the stream being read. */
  reading: undefined,
  /** Server time minus this page's time, from the last snapshot. */
  offsetMs: 0,
  /** laneKey → { element, label, track, bars: Map<callKey, { element, record }> } */
  lanes: new Map(),
  /** node ("" for this server's own pool) → group element */
  groups: new Map(),
  /** session key (see `sessionKeyOf`) → its row of the table */
  sessions: new Map(),
  dropped: 0,
  /** Milliseconds of history shown, as chosen in the page. */
  windowMs: 15_000,
};

/**
 * @param {string} tag
 * @param {string} [className]
 * @param {unknown} [text]
 * @returns {HTMLElement}
 */
function el(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = String(text);
  return element;
}

/** @param {number | undefined | null} value */
function ms(value) {
  if (value === undefined || value === null) return "–";
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s`;
}

/**
 * @param {string | undefined} session
 * @param {string | undefined} batchId
 */
function sessionLabel(session, batchId) {
  return session ?? `(batch ${batchId})`;
}

/**
 * A session's key in the table: a session named like a batch's label is still another row.
 * @param {string | undefined} session
 * @param {string | undefined} batchId
 */
function sessionKeyOf(session, batchId) {
  return session === undefined ? `batch\u0000${batchId}` : `session\u0000${session}`;
}

/**
 * Whether an HTTP header can carry `token` (Latin-1 without control characters).
 * @param {string} token
 */
function isHeaderSafe(token) {
  return !/[^\u0020-\u007e\u00a0-\u00ff]/.test(token);
}

/** @param {string} text */
function setStatus(text) {
  $("status").textContent = text;
}

/** Forgets everything shown: without an accepted token the page shows nothing of the pool. */
function clearPool() {
  $("pool").hidden = true;
  for (const id of ["stats", "lanes", "faults"]) $(id).replaceChildren();
  for (const id of ["sessions", "tools"]) $tbody(id).replaceChildren();
  $("dropped").textContent = "";
  $("sessions-note").textContent = "";
  view.lanes.clear();
  view.groups.clear();
  view.sessions.clear();
  view.dropped = 0;
}

/**
 * @param {string} token
 * @param {boolean} [isFirstTry] the page's own try without a token, as it opens: a 401 then asks for the token rather than saying "Refused"
 */
async function connect(token, isFirstTry = false) {
  view.reading?.abort();
  const reading = new AbortController();
  view.reading = reading;
  clearPool();
  if (!isHeaderSafe(token)) {
    sessionStorage.removeItem(tokenKey);
    setStatus("Refused: the token holds characters an HTTP header cannot carry.");
    $("disconnect").hidden = true;
    return;
  }
  setStatus("Connecting…");
  let response;
  try {
    response = await fetch("/v1/pool/events", {
      headers: token === "" ? {} : { authorization: `Bearer ${token}` },
      cache: "no-store",
      signal: reading.signal,
    });
  } catch (error) {
    if (!reading.signal.aborted) retryLater(token, `Cannot reach the server (${messageOf(error)}).`);
    return;
  }
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).message ?? message;
    } catch {}
    if (response.status === 401 || response.status === 403) {
      sessionStorage.removeItem(tokenKey);
      setStatus(isFirstTry && response.status === 401 ? "Enter the server's token to see its pool." : `Refused: ${message}`);
      $("disconnect").hidden = true;
    } else {
      retryLater(token, `The stream is not available: ${message}.`);
    }
    return;
  }
  // A tokenless connection keeps nothing: were the server to need a token later, the page asks for it.
  if (token === "") sessionStorage.removeItem(tokenKey);
  else sessionStorage.setItem(tokenKey, token);
  $("disconnect").hidden = false;
  $field("token").value = "";
  setStatus("Connected: live.");
  try {
    if (response.body === null) throw new Error("no body");
    await readFrames(response.body, reading.signal);
    if (!reading.signal.aborted) retryLater(token, "The stream ended.");
  } catch (error) {
    if (!reading.signal.aborted) retryLater(token, `The stream broke (${messageOf(error)}).`);
  }
}

/** @param {unknown} error */
function messageOf(error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * @param {string} token
 * @param {string} why
 */
function retryLater(token, why) {
  setStatus(`${why} Reconnecting in 2 s…`);
  const reading = view.reading;
  setTimeout(() => {
    if (reading !== undefined && view.reading === reading && !reading.signal.aborted) void connect(token);
  }, 2000);
}

/**
 * @param {ReadableStream<BufferSource>} body
 * @param {AbortSignal} signal
 */
async function readFrames(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  signal.addEventListener("abort", () => reader.cancel().catch(() => {}), { once: true });
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      let data = "";
      for (const line of block.split("\n")) if (line.startsWith("data: ")) data += line.slice(6);
      if (data !== "") onFrame(JSON.parse(data));
    }
  }
}

/** @param {PoolEventFrame} frame */
function onFrame(frame) {
  if (frame.type === "hello") {
    $("pool").hidden = false;
  } else if (frame.type === "calls") {
    for (const record of frame.calls) addCall(record);
    if (frame.dropped > 0) {
      view.dropped += frame.dropped;
      $("dropped").textContent = `· ${view.dropped} ended calls not shown (this page fell behind the stream)`;
    }
  } else if (frame.type === "snapshot") {
    view.offsetMs = frame.at - Date.now();
    drawStats(frame);
    drawThreads(frame.threads);
    drawSessions(frame);
    drawTools(frame.tools);
    drawFaults(frame.faults);
    layoutBars();
  }
}

/** @param {PoolSnapshotFrame} snapshot */
function drawStats({ stats, fleet }) {
  /** @type {[string, unknown][]} */
  const entries = [];
  if (stats !== null) {
    entries.push(
      ["Threads", stats.threads],
      ["Running", stats.running],
      ["Queued", stats.queued],
      ["Completed", stats.completed],
      ["Utilization", `${Math.round(stats.utilization * 100)} %`],
      ["Sessions waiting", stats.sessionsWaiting],
      ["Longest wait", ms(stats.longestWaitMs)],
    );
  }
  if (fleet !== null) entries.push(["Fleet nodes", fleet.nodes], ["Fleet threads", fleet.threads], ["Fleet calls in flight", fleet.inFlight]);
  if (entries.length === 0) entries.push(["Worker tools", "none"]);
  $("stats").replaceChildren(
    ...entries.map(([name, value]) => {
      const item = el("div", "stat");
      item.append(el("dt", "", name), el("dd", "", value));
      return item;
    }),
  );
}

/**
 * @param {string | undefined} node
 * @param {number | undefined} threadId
 */
function laneKeyOf(node, threadId) {
  if (threadId === undefined) return node === undefined ? "none" : `${node}:none`;
  return node === undefined ? String(threadId) : `${node}:${threadId}`;
}

/**
 * @param {string | undefined} node
 * @param {number | undefined} threadId
 * @returns {Lane}
 */
function laneOf(node, threadId) {
  const key = laneKeyOf(node, threadId);
  let lane = view.lanes.get(key);
  if (lane !== undefined) return lane;
  const group = groupOf(node ?? "");
  const element = el("div", "lane");
  element.dataset.thread = key;
  element.dataset.state = node === undefined && threadId !== undefined ? "retired" : "unknown";
  const label = el("div", "lane-label");
  const title = el("span", "lane-title", threadId === undefined ? "not on a thread" : `thread ${threadId}`);
  const state = el("span", "lane-state");
  const call = el("span", "lane-call");
  label.append(title, state, call);
  const track = el("div", "track");
  element.append(label, track);
  group.append(element);
  lane = { element, state, call, track, bars: new Map() };
  view.lanes.set(key, lane);
  return lane;
}

/** @param {string} node */
function groupOf(node) {
  let group = view.groups.get(node);
  if (group !== undefined) return group;
  group = el("div", "lane-group");
  if (node !== "") group.dataset.node = node;
  group.append(el("h3", "", node === "" ? "This server's pool" : `Fleet node ${node}`));
  if (node === "") $("lanes").prepend(group);
  else $("lanes").append(group);
  view.groups.set(node, group);
  return group;
}

/** @param {PoolThreadView[]} threads */
function drawThreads(threads) {
  /** @type {Set<Lane>} */
  const live = new Set();
  for (const thread of threads) {
    const lane = laneOf(undefined, thread.threadId);
    live.add(lane);
    lane.element.dataset.state = thread.state;
    lane.state.textContent = thread.state;
    const call = thread.call;
    lane.call.textContent =
      call === undefined
        ? ""
        : `${thread.state === "retired" ? "last ran" : "runs"} ${call.tool} ${call.toolCallId} · ${sessionLabel(call.session, call.batchId ?? "?")}`;
    lane.element.title = thread.pool === "shared" ? "shared pool" : `pool of tool ${thread.pool}`;
  }
  // A local thread no longer listed is long gone (the stream lists the last retired ones): its lane goes.
  for (const [key, lane] of view.lanes) {
    if (!live.has(lane) && !key.includes(":") && key !== "none") {
      lane.element.remove();
      view.lanes.delete(key);
    }
  }
}

/** @param {PoolCallRecord} record */
function addCall(record) {
  const lane = laneOf(record.node, record.threadId);
  const key = `${record.batchId}\u0000${record.toolCallId}`;
  removeBar(lane, key);
  const bar = el("div", `bar ${record.outcome}`);
  bar.dataset.callId = record.toolCallId;
  bar.dataset.batchId = record.batchId;
  bar.dataset.outcome = record.outcome;
  if (record.code !== undefined) bar.dataset.code = record.code;
  bar.textContent = record.outcome === "fault" ? (record.code ?? "") : record.tool;
  // The queue wait, a thin line before the bar: it overlaps the runs of earlier calls on the thread.
  const wait = el("div", "wait");
  const session = sessionLabel(record.session, record.batchId);
  const lines = [
    `${record.tool} · call ${record.toolCallId}`,
    `session ${session}`,
    record.outcome === "fault" ? `fault ${record.code}` : record.outcome === "error" ? "tool error" : "ok",
    `queue wait ${ms(record.queueWaitMs)} · run ${ms(record.runMs)}`,
  ];
  if (record.message !== undefined) lines.push(record.message);
  bar.title = lines.join("\n");
  lane.track.append(wait, bar);
  lane.bars.set(key, { element: bar, wait, record });
  const oldest = lane.bars.keys().next().value;
  if (lane.bars.size > barsPerLane && oldest !== undefined) removeBar(lane, oldest);
  noteSession(record.session, record.batchId, record.outcome !== "ok");
  const placed = lane.bars.get(key);
  if (placed !== undefined) placeBar(placed, Date.now() + view.offsetMs);
}

/**
 * @param {Lane} lane
 * @param {string} key
 */
function removeBar(lane, key) {
  const entry = lane.bars.get(key);
  if (entry === undefined) return;
  entry.element.remove();
  entry.wait.remove();
  lane.bars.delete(key);
}

/**
 * @param {string | undefined} session
 * @param {string} batchId
 * @param {boolean} isError
 */
function noteSession(session, batchId, isError) {
  const key = sessionKeyOf(session, batchId);
  const entry = view.sessions.get(key) ?? {
    label: sessionLabel(session, batchId),
    waiting: 0,
    capped: 0,
    running: 0,
    longestWaitMs: 0,
    ended: 0,
    errors: 0,
    lastSeen: 0,
  };
  entry.ended += 1;
  if (isError) entry.errors += 1;
  entry.lastSeen = Date.now();
  view.sessions.delete(key);
  view.sessions.set(key, entry);
}

/**
 * Places a call's bar (dispatch to end) and its queue wait (before dispatch) on the timeline ending at `now`.
 * @param {Bar} bar
 * @param {number} now
 */
function placeBar({ element, wait, record }, now) {
  const windowMs = view.windowMs;
  const from = now - windowMs;
  const end = record.endedAt;
  const dispatched = end - (record.runMs ?? 0);
  const queued = dispatched - (record.queueWaitMs ?? 0);
  const at = (/** @type {number} */ time) => ((Math.max(time, from) - from) / windowMs) * 100;
  element.hidden = end < from;
  wait.hidden = dispatched < from || queued === dispatched;
  element.style.left = `${Math.min(at(dispatched), 99.75)}%`;
  element.style.width = `${Math.max(0.25, at(end) - at(dispatched))}%`;
  wait.style.left = `${at(queued)}%`;
  wait.style.width = `${at(dispatched) - at(queued)}%`;
}

function layoutBars() {
  const now = Date.now() + view.offsetMs;
  $("axis-start").textContent = `−${view.windowMs / 1000} s`;
  $("axis-middle").textContent = `−${view.windowMs / 2000} s`;
  for (const lane of view.lanes.values()) {
    for (const [key, entry] of lane.bars) {
      if (entry.record.endedAt < now - keptMs) removeBar(lane, key);
      else placeBar(entry, now);
    }
  }
}

/** @param {PoolSnapshotFrame} snapshot */
function drawSessions({ sessions, sessionsOmitted }) {
  for (const entry of view.sessions.values()) {
    entry.waiting = 0;
    entry.capped = 0;
    entry.running = 0;
    entry.longestWaitMs = 0;
  }
  for (const session of sessions) {
    const key = sessionKeyOf(session.session, session.batchId);
    const entry = view.sessions.get(key) ?? {
      label: sessionLabel(session.session, session.batchId),
      ended: 0,
      errors: 0,
      waiting: 0,
      capped: 0,
      running: 0,
      longestWaitMs: 0,
      lastSeen: 0,
    };
    Object.assign(entry, {
      waiting: session.waiting,
      // A server from before caps sends no count.
      capped: session.capped ?? 0,
      running: session.running,
      longestWaitMs: session.longestWaitMs,
      lastSeen: Date.now(),
    });
    view.sessions.set(key, entry);
  }
  const ordered = [...view.sessions].sort(
    ([, a], [, b]) => b.waiting + b.capped - (a.waiting + a.capped) || b.running - a.running || b.lastSeen - a.lastSeen,
  );
  for (const [key] of ordered.slice(sessionsKept)) view.sessions.delete(key);
  $tbody("sessions").replaceChildren(
    ...ordered.slice(0, sessionsKept).map(([key, entry]) => {
      const row = el("tr");
      row.dataset.session = entry.label;
      row.dataset.kind = key.startsWith("batch") ? "batch" : "session";
      row.append(
        el("td", "name", entry.label),
        el("td", "num", entry.waiting),
        el("td", "num", entry.capped),
        el("td", "num", entry.running),
        el("td", "num", entry.waiting + entry.capped > 0 ? ms(entry.longestWaitMs) : "–"),
        el("td", "num", entry.ended),
        el("td", "num", entry.errors),
      );
      return row;
    }),
  );
  $("sessions-note").textContent = sessionsOmitted > 0 ? `and ${sessionsOmitted} more sessions under way` : "";
}

/** @param {PoolToolView[]} tools */
function drawTools(tools) {
  $tbody("tools").replaceChildren(
    ...tools.map((tool) => {
      const row = el("tr");
      row.dataset.tool = tool.tool;
      const faults = Object.entries(tool.faults)
        .map(([code, count]) => `${code} ×${count}`)
        .join(", ");
      row.append(
        el("td", "name", tool.tool),
        el("td", "num", tool.count),
        el("td", "num", ms(tool.p50RunMs)),
        el("td", "num", ms(tool.p99RunMs)),
        el("td", "num", tool.errors),
        el("td", faults === "" ? "" : "fault", faults === "" ? "–" : faults),
      );
      return row;
    }),
  );
}

/** @param {PoolFaultView[]} faults */
function drawFaults(faults) {
  $("faults").replaceChildren(
    ...faults
      .slice()
      .reverse()
      .map((fault) => {
        const item = el("li");
        item.append(el("time", "muted", new Date(fault.at).toLocaleTimeString()), el("strong", "fault", fault.code ?? "pool error"));
        const where = [fault.tool, fault.toolCallId && `call ${fault.toolCallId}`, fault.session && `session ${fault.session}`];
        if (fault.threadId !== undefined) where.push(`thread ${fault.threadId}`);
        item.append(el("span", "", where.filter(Boolean).join(" · ")), el("span", "muted", fault.message));
        return item;
      }),
  );
}

// The timeline moves on between snapshots (an idle pool sends one only every few seconds).
setInterval(layoutBars, 500);
$("window").addEventListener("change", () => {
  view.windowMs = Number($field("window").value) * 1000;
  layoutBars();
});
$("connect").addEventListener("submit", (event) => {
  event.preventDefault();
  void connect($field("token").value.trim());
});
$("disconnect").addEventListener("click", () => {
  view.reading?.abort();
  view.reading = undefined;
  sessionStorage.removeItem(tokenKey);
  $("disconnect").hidden = true;
  clearPool();
  setStatus("Disconnected. Enter the server's token to see its pool.");
});
// A link's token first, else the tab's from an earlier visit; with neither,
// a try without one: a server without a token shows its pool at once (its
// plain link is a connected view), one with a token answers 401 and the form
// asks for it.
// An empty one (`#token=`) counts as none.
const initialToken = takeLinkedToken() || sessionStorage.getItem(tokenKey) || null;
void connect(initialToken ?? "", initialToken === null);

/**
 * The token a link carries in its fragment (`/ui/#token=…`, what `toolpool
 * serve` prints), or null. A browser never sends a fragment to the server,
 * so the token stays out of request lines and the server's logs; it is
 * removed from the address bar and the history entry at once, before any
 * request.
 * @returns {string | null}
 */
function takeLinkedToken() {
  const part = location.hash
    .slice(1)
    .split("&")
    .find((item) => item.startsWith("token="));
  if (part === undefined) return null;
  history.replaceState(history.state, "", location.pathname + location.search);
  const encoded = part.slice("token=".length);
  try {
    return decodeURIComponent(encoded).trim();
  } catch {
    return encoded.trim();
  }
}

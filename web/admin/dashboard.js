// Operator dashboard of the waiting room (served at /admin/ on the
// management port). Plain script, no dependencies, no inline code: it runs
// under a Content-Security-Policy of default-src 'self'.
//
// The admin token is typed by the operator, kept in sessionStorage (this tab
// only) and sent only as "Authorization: Bearer" on same-origin fetches. It
// never goes into a URL, a cookie or localStorage.
//
// Every second it samples a page of GET /admin/rooms — never every room:
// the rooms with work first (busy=1), then idle ones by name, up to
// LIST_LIMIT, or those whose name starts with what the search box holds,
// and the selected room whatever its page (the rooms' table, the summary,
// and the latency and error charts, kept in memory for an hour) and the
// selected room's history from the server (GET …/history: the whole last
// hour once, then only the points after the last one), so that the charts
// of people waiting, active and admitted are the same after a reload and for
// every operator, on any instance. Every few seconds it reads
// GET /admin/stats (what waiting users see, this instance's streams, 429s
// and pool wait, and in gateway and forward-auth modes the shop: the
// origin's answers and the gateway's decisions), the audit log and the
// access lists.
//
// Fields a server does not report (older or newer versions) show as "—" and
// their controls stay hidden, as do panels whose resource answers 404; a
// control sends only the fields it changes, and only fields the room's
// document contains. The Gateway panel shows only for rooms whose document
// has a gateway object (gateway mode, WR_UPSTREAM set). Pausing, the method
// "reject" and a limit of 0 are confirmed first in a modal dialog (Cancel
// has the focus; Escape cancels).
(() => {
  'use strict';

  const TOKEN_KEY = 'wr-admin-token';
  const HISTORY_MS = 60 * 60 * 1000; // what the charts can show, and the server keeps
  const WINDOW_MS = 10 * 60 * 1000; // the charts' span at first
  const SAMPLE_MS = 1000;
  const SIDE_EVERY = 3; // samples between reads of the stats, audit log and access lists
  const AUDIT_LIMIT = 20;
  const SHOP_WINDOW_MS = 60 * 1000; // the shop's changes are taken over this span of reads
  const LIST_LIMIT = 50; // rooms in the table and the list
  const SKEW_MIN_MS = 2000; // a smaller clock difference is not corrected
  const TIMEOUT_MS = 4000;
  const GAP_MS = 3 * SAMPLE_MS + TIMEOUT_MS; // samples further apart are not joined
  const SVG = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  const nf = new Intl.NumberFormat();
  const nf1 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
  const nf2 = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
  const dash = '—';
  const has = (doc, key) => doc != null && Object.prototype.hasOwnProperty.call(doc, key);
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const fmt = (v, f = nf) => (num(v) === null ? dash : f.format(v));
  const pct = (x) => (num(x) === null ? dash : Math.round(x * 100) + ' %');
  const clock = (t) => new Date(t).toLocaleTimeString();

  const state = {
    token: '',
    room: '',
    rooms: new Map(), // name → newRoom(doc)
    names: [], // rooms of the latest answer, in its order
    timer: 0,
    running: false,
    conn: 'idle',
    failingSince: 0,
    lastOk: 0,
    dirty: new Set(), // ids of inputs the operator has edited but not sent
    windowMs: WINDOW_MS, // the charts' span; history is always kept for HISTORY_MS
    history: 'unknown', // whether the server keeps rooms' history: 'yes', 'no' (older)
    skew: null, // the server's clock minus this browser's (ms), once measured
    dated: null, // { server, local }: the Date of the last answer, and when it came
    tick: 0,
    stats: null, // GET /admin/stats; null: not read (yet), or not served
    shopReads: [], // { t, shop }: the stats' shop objects of the last SHOP_WINDOW_MS
    access: null, // GET /admin/access
    accessSeq: 0, // bumped by each change of the lists: older reads are dropped
    audit: null, // the entries of GET /admin/audit
    side: false, // a read of stats, audit and access under way
    search: '', // the start of the names listed ('': the busy rooms first)
    more: false, // the list left out rooms that match
  };

  // newRoom is a room's state: its latest document, the samples this tab
  // took, and the points of the server's history (hist, up to histLast).
  const newRoom = (doc) => ({ doc, samples: [], hist: [], histLast: 0, pulling: false });

  // ---- API ---------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(method, path, body) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    const headers = { Authorization: 'Bearer ' + state.token, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res;
    let data = null;
    try {
      res = await fetch(path, {
        method, headers, signal: ctl.signal, cache: 'no-store', credentials: 'omit', redirect: 'error',
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      data = await res.json().catch(() => null);
      state.dated = { server: Date.parse(res.headers.get('Date') || ''), local: Date.now() };
    } catch (e) {
      throw new ApiError(0, 'unreachable', ctl.signal.aborted ? 'no answer within ' + TIMEOUT_MS / 1000 + ' s' : 'the server did not answer');
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) {
      const code = (data && data.error) || 'http_' + res.status;
      throw new ApiError(res.status, code, (data && data.message) || 'HTTP ' + res.status);
    }
    return data;
  }

  const roomPath = (name) => '/admin/rooms/' + encodeURIComponent(name);

  // busy tells whether anyone is in a room: waiting, pre-queued or admitted.
  const busy = (d) => num(d.waiting) > 0 || num(d.active) > 0 || num(d.preQueue) > 0;

  // pageOf reads one page of GET /admin/rooms; a server that does not page
  // (no next field) answers every room, which is read as one last page.
  async function pageOf(query) {
    const data = await api('GET', '/admin/rooms?' + query);
    const rooms = Array.isArray(data && data.rooms) ? data.rooms : [];
    return { rooms, more: !!(data && typeof data.next === 'string') };
  }

  // listRooms reads the rooms to show, a page at a time and never every
  // room: those whose name starts with the search, with work first; with
  // no search, the rooms with work, then idle rooms by name up to
  // LIST_LIMIT. The selected room (or the one the address names) is read
  // on its own when the list left it out.
  async function listRooms() {
    const q = (extra) => 'limit=' + LIST_LIMIT + extra;
    let docs;
    let more;
    if (state.search) {
      const p = await pageOf(q('&prefix=' + encodeURIComponent(state.search)));
      docs = p.rooms.filter((d) => busy(d)).concat(p.rooms.filter((d) => !busy(d)));
      more = p.more;
    } else {
      const p = await pageOf(q('&busy=1'));
      docs = p.rooms;
      more = p.more;
      if (!more && docs.length < LIST_LIMIT) {
        const idle = await pageOf('limit=' + (LIST_LIMIT - docs.length) + '&busy=0');
        const seen = new Set(docs.map((d) => d.room));
        docs = docs.concat(idle.rooms.filter((d) => d && !seen.has(d.room)));
        more = idle.more;
      }
    }
    const want = state.room || roomFromHash();
    if (want && !docs.some((d) => d && d.room === want)) {
      try {
        docs.push(await api('GET', roomPath(want)));
      } catch (e) {
        if (e.status !== 404 && e.status !== 400) throw e;
      }
    }
    state.more = more;
    return docs;
  }

  const roomFromHash = () => decodeURIComponent((location.hash.match(/^#room=([^&]+)/) || [])[1] || '');

  // ---- sampling ------------------------------------------------------------

  function start() {
    state.running = true;
    clearTimeout(state.timer);
    sample();
  }

  function stop() {
    state.running = false;
    clearTimeout(state.timer);
  }

  async function sample() {
    if (!state.running) return;
    const began = Date.now();
    try {
      const docs = await listRooms();
      if (!state.running) return;
      record(docs, Date.now(), began);
      setConn('live');
      await pullHistory(currentRoom());
      if (!state.running) return;
      if (state.tick++ % SIDE_EVERY === 0) pullSide();
    } catch (e) {
      if (!state.running) return;
      if (e.status === 401) {
        refused(e.message);
        return;
      }
      gap(Date.now());
      setConn('unreachable', e.status ? e.status + ' ' + e.message : e.message);
    }
    render();
    state.timer = setTimeout(sample, Math.max(0, began + SAMPLE_MS - Date.now()));
  }

  // record adds one sample per room. Admitted per second is the change of
  // the admitted counter over the time between two consecutive samples.
  // A sample read before a change this tab saved must not put the room's
  // old document back over the one the change answered (the question a
  // limit of 0 asks, say, reads it): began is when the sample was asked for.
  function record(docs, t, began = 0) {
    state.names = [];
    for (const doc of docs) {
      if (!doc || typeof doc.room !== 'string') continue;
      state.names.push(doc.room);
      let r = state.rooms.get(doc.room);
      if (!r) {
        r = newRoom(doc);
        state.rooms.set(doc.room, r);
      }
      const prev = r.samples.length ? r.samples[r.samples.length - 1] : null;
      let perSec = null;
      if (prev && !prev.gap && t - prev.t <= GAP_MS && num(doc.admitted) !== null && num(prev.admitted) !== null &&
          doc.admitted >= prev.admitted && t > prev.t) {
        perSec = (doc.admitted - prev.admitted) / ((t - prev.t) / 1000);
      }
      const sig = doc.signals && typeof doc.signals === 'object' ? doc.signals : null;
      const errorRate = sig ? num(sig.errorRate) : null;
      if (!(r.savedAt > began)) r.doc = doc;
      r.samples.push({
        t,
        waiting: num(doc.waiting),
        active: num(doc.active),
        target: num(doc.targetActive),
        admitted: num(doc.admitted),
        admittedPerSec: perSec,
        p90: sig ? num(sig.p90Ms) : null,
        baseline: sig ? num(sig.baselineP90Ms) : null,
        errorPct: errorRate === null ? null : errorRate * 100,
        errors: sig ? num(sig.errors) : null,
      });
      prune(r.samples, t);
    }
  }

  // gap marks a failed sample, so lines break instead of bridging an outage.
  function gap(t) {
    for (const r of state.rooms.values()) {
      const last = r.samples[r.samples.length - 1];
      if (last && !last.gap) r.samples.push({ t, gap: true });
      prune(r.samples, t);
    }
  }

  // prune drops what is older than HISTORY_MS from a list of samples or
  // points.
  function prune(list, now) {
    let i = 0;
    while (i < list.length && list[i].t < now - HISTORY_MS) i++;
    if (i) list.splice(0, i);
  }

  // ---- the server's history ------------------------------------------------

  // pullHistory adds the selected room's newest points: the whole last hour
  // the first time, then those after the last point held. A refused token
  // is thrown; other failures wait for the next second (points missed
  // meanwhile come then: the server keeps recording). A server without the
  // history (404 that is not room_not_found, 405) is remembered: the charts
  // then draw this tab's samples, as before.
  async function pullHistory(r) {
    if (!r || state.history === 'no' || r.pulling) return;
    r.pulling = true;
    try {
      const since = r.histLast ? '?since=' + r.histLast : '';
      const data = await api('GET', roomPath(r.doc.room) + '/history' + since);
      state.history = 'yes';
      if (state.skew === null) state.skew = skewOf(state.dated);
      addPoints(r, data);
    } catch (e) {
      if (e.status === 401) throw e;
      if ((e.status === 404 && e.code !== 'room_not_found') || e.status === 405) state.history = 'no';
    } finally {
      r.pulling = false;
    }
  }

  // skewOf is the server's clock minus this browser's, from an answer's
  // Date header (whole seconds, so half a second is added); differences
  // under SKEW_MIN_MS are taken as none.
  function skewOf(dated) {
    if (!dated || Number.isNaN(dated.server)) return 0;
    const d = dated.server + 500 - dated.local;
    return Math.abs(d) < SKEW_MIN_MS ? 0 : d;
  }

  // addPoints appends a history document's points (arrays in the order of
  // its fields) newer than the last one held. Admitted per second is a
  // point's admitted over the time since the previous point (a second, or
  // more when seconds are missing); t is the point's time on this
  // browser's clock, st on the server's.
  function addPoints(r, data) {
    const fields = Array.isArray(data && data.fields) ? data.fields : [];
    const [it, iw, ia, ig, iad, ie, im] = ['t', 'waiting', 'active', 'targetActive', 'admitted', 'etaLast', 'etaMid'].map((f) => fields.indexOf(f));
    if (it < 0 || !Array.isArray(data.points)) return;
    const at = (p, i) => (i < 0 ? null : num(p[i]));
    for (const p of data.points) {
      const st = Array.isArray(p) ? num(p[it]) : null;
      if (st === null || st <= r.histLast) continue;
      const prev = r.hist.length ? r.hist[r.hist.length - 1] : null;
      const admitted = at(p, iad);
      const perSec = prev && admitted !== null && st - prev.st <= GAP_MS ? admitted / ((st - prev.st) / 1000) : null;
      r.hist.push({ t: st - (state.skew || 0), st, waiting: at(p, iw), active: at(p, ia), target: at(p, ig), admittedPerSec: perSec, etaLast: at(p, ie), etaMid: at(p, im) });
      r.histLast = st;
    }
    prune(r.hist, Date.now());
  }

  function setConn(s, detail) {
    const el = $('conn');
    const now = Date.now();
    if (s === 'live') state.lastOk = now;
    if (s === 'unreachable' && state.conn !== 'unreachable') state.failingSince = now;
    const changed = s !== state.conn || (s === 'unreachable' && el.dataset.detail !== (detail || ''));
    state.conn = s;
    if (changed) {
      // The live region speaks only when the state changes, not every second.
      el.dataset.state = s;
      el.dataset.detail = detail || '';
      el.textContent = {
        idle: 'Not connected',
        live: 'Live',
        unreachable: 'Unreachable since ' + clock(state.failingSince) + ' (' + (detail || 'no answer') + '); retrying every second',
        refused: 'Token refused',
      }[s];
    }
    $('updated').textContent = state.lastOk ? 'Last sample ' + clock(state.lastOk) : '';
  }

  // ---- token -----------------------------------------------------------------

  function askToken(message) {
    stop();
    $('dash').hidden = true;
    $('auth').hidden = false;
    $('forget-btn').hidden = true;
    $('auth-error').textContent = message || '';
    $('token-input').value = '';
    $('token-input').focus();
  }

  function refused(message) {
    state.token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    setConn('refused');
    askToken('The server refused this token' + (message ? ': ' + message : '.'));
  }

  function showDashboard() {
    $('auth').hidden = true;
    $('auth-error').textContent = '';
    $('dash').hidden = false;
    $('forget-btn').hidden = false;
  }

  // connect checks a typed token with one request before keeping it.
  async function connect(token) {
    state.token = token;
    const btn = $('token-form').querySelector('button');
    btn.disabled = true;
    try {
      const docs = await listRooms();
      sessionStorage.setItem(TOKEN_KEY, token);
      showDashboard();
      record(docs, Date.now());
      setConn('live');
      render();
      state.running = true;
      state.timer = setTimeout(sample, SAMPLE_MS);
      pullSide();
      pullHistory(currentRoom()).then(render, failed);
    } catch (e) {
      if (e.status === 401) {
        refused(e.message);
      } else {
        state.token = '';
        $('auth-error').textContent = 'Could not check the token: ' + e.message + '.';
      }
    } finally {
      btn.disabled = false;
    }
  }

  // ---- rendering -----------------------------------------------------------

  function currentRoom() {
    if (!state.names.includes(state.room)) {
      state.room = [roomFromHash(), 'default', state.names[0]].find((n) => n && state.names.includes(n)) || '';
    }
    return state.room ? state.rooms.get(state.room) : null;
  }

  function render() {
    const r = currentRoom();
    renderRooms();
    renderSummary(r ? r.doc : null, r ? r.samples : []);
    renderUsers(r ? r.doc : null);
    renderShop();
    for (const c of charts) c.draw(r ? seriesOf(r, c.def) : [], r ? r.doc : null);
    renderControls(r ? r.doc : null);
    renderGateway(r ? r.doc : null);
    renderAccess();
    renderAudit();
  }

  // seriesOf is what a chart draws: the server's history, or this tab's
  // samples for the charts the history does not hold (and for a server
  // without one).
  const seriesOf = (r, def) => (def.live || state.history === 'no' ? r.samples : r.hist);

  // failed handles a request that failed outside the sampling: a refused
  // token asks for a new one; anything else waits for the next sample.
  function failed(e) {
    if (e && e.status === 401) refused(e.message);
  }

  function renderRooms() {
    $('rooms-more').hidden = !state.more;
    setText('rooms-more', state.search
      ? 'More rooms start with “' + state.search + '” than shown: type more of the name.'
      : 'More rooms have someone in them than shown: type the start of a name to find one.');
    const sel = $('room-select');
    const same = sel.options.length === state.names.length && state.names.every((n, i) => sel.options[i].value === n);
    if (!same) {
      sel.replaceChildren(...state.names.map((n) => new Option(n, n)));
    }
    if (sel.value !== state.room) sel.value = state.room;
    // Rows are rebuilt only when the rooms change; otherwise their cells are
    // updated in place, so focus and a screen reader's place stay put.
    const body = $('rooms-table').tBodies[0];
    if (!same || body.rows.length !== state.names.length) {
      body.replaceChildren(...state.names.map((n) => {
        const tr = document.createElement('tr');
        tr.dataset.room = n;
        const th = document.createElement('th');
        th.scope = 'row';
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'link';
        b.textContent = n;
        b.dataset.room = n;
        th.append(b);
        tr.append(th);
        for (let i = 0; i < 4; i++) tr.append(document.createElement('td'));
        return tr;
      }));
    }
    for (const tr of body.rows) {
      const d = state.rooms.get(tr.dataset.room).doc;
      if (tr.dataset.room === state.room) tr.setAttribute('aria-current', 'true');
      else tr.removeAttribute('aria-current');
      [fmt(d.waiting), fmt(d.active), fmt(d.targetActive), roomState(d)].forEach((v, i) => {
        if (tr.cells[i + 1].textContent !== v) tr.cells[i + 1].textContent = v;
      });
    }
  }

  function roomState(d) {
    const parts = [d.paused ? 'paused' : 'running'];
    if (has(d, 'mode') && d.mode) parts.push(d.mode);
    if (has(d, 'method') && d.method) parts.push(d.method);
    if (has(d, 'opensAt') && d.opensAt) parts.push('opens ' + new Date(d.opensAt).toLocaleString());
    return parts.join(', ');
  }

  function setText(id, text) {
    const el = $(id);
    if (el.textContent !== text) el.textContent = text;
  }

  function renderSummary(d, samples) {
    setText('room-name', d ? d.room : dash);
    if (!d) return;
    const last = samples.length ? samples[samples.length - 1] : null;
    setText('s-waiting', fmt(d.waiting));
    setText('s-active', fmt(d.active) + ' / ' + fmt(d.targetActive));
    setText('s-admitted', last && !last.gap ? fmt(last.admittedPerSec, nf1) : dash);
    setText('s-rate', num(d.admissionRate) === null ? dash : nf1.format(d.admissionRate) + ' /s');
    setText('s-paused', typeof d.paused === 'boolean' ? (d.paused ? 'paused' : 'running') : dash);
    setText('s-mode', modeText(d));
    setText('s-method', has(d, 'method') && d.method ? d.method : dash);
    setText('s-opens', has(d, 'opensAt') && d.opensAt ? opensText(d.opensAt) : has(d, 'opensAt') ? 'open (no schedule)' : dash);
    setText('s-prequeue', has(d, 'preQueue') ? fmt(d.preQueue) : dash);
    setText('s-seed', has(d, 'shuffleSeed') && d.shuffleSeed !== null && d.shuffleSeed !== '' ? String(d.shuffleSeed) : dash);
    setText('s-ttl', num(d.entryTtlSeconds) === null ? (d.entryTtl || dash) : fmt(d.entryTtlSeconds) + ' s');
    const sig = d.signals && typeof d.signals === 'object' ? d.signals : null;
    const stale = sig && sig.stale ? ' (stale)' : '';
    const baseline = adaptiveOn(d) && num(sig && sig.baselineP90Ms) > 0 ? ', baseline ' + nf1.format(sig.baselineP90Ms) + ' ms' : '';
    setText('s-p90', sig && num(sig.p90Ms) !== null ? nf1.format(sig.p90Ms) + ' ms' + baseline + stale : dash);
    setText('s-errors', sig && num(sig.errors) !== null
      ? fmt(sig.errors) + ' of ' + fmt(sig.orders) + ' orders' + (num(sig.errorRate) !== null ? ' (' + nf1.format(sig.errorRate * 100) + ' %)' : '') +
        (num(sig.windowSeconds) !== null ? ' in ' + fmt(sig.windowSeconds) + ' s' : '') + stale
      : dash);
    const lc = d.lastChange && typeof d.lastChange === 'object' ? d.lastChange : null;
    setText('s-lastchange', lc ? fmt(lc.from) + ' → ' + fmt(lc.to) + (lc.at ? ' at ' + new Date(lc.at).toLocaleTimeString() : '') + (lc.reason ? ': ' + lc.reason : '') : has(d, 'lastChange') ? 'none yet' : dash);
    setText('s-totals', ['entered', 'admitted', 'expired', 'left', 'abandoned'].map((k) => k + ' ' + fmt(d[k])).join(' · '));
  }

  // adaptiveOn tells whether the room's limit follows the downstream (a
  // server without modes: as if it did, so nothing it reports is hidden).
  const adaptiveOn = (d) => !has(d, 'mode') || d.mode === 'adaptive';

  // modeText words the mode: "adaptive (4–200)", its bounds; "fixed (limit
  // 20)", just the limit it holds.
  function modeText(d) {
    if (!has(d, 'mode') || !d.mode) return dash;
    if (d.mode === 'fixed') return 'fixed (limit ' + fmt(d.targetActive) + ')';
    return d.mode + (has(d, 'minActive') || has(d, 'maxActive') ? ' (' + fmt(d.minActive) + '–' + fmt(d.maxActive) + ')' : '');
  }

  function opensText(iso) {
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return String(iso);
    const left = Math.round((t - Date.now()) / 1000);
    const when = new Date(t).toLocaleString();
    if (left <= 0) return when + ' (open)';
    const h = Math.floor(left / 3600);
    const m = Math.floor((left % 3600) / 60);
    const s = left % 60;
    return when + ' (in ' + (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(s).padStart(2, '0') + ')';
  }

  // ---- charts (inline SVG) -------------------------------------------------

  const W = 600;
  const H = 170;
  const PAD = { l: 48, r: 10, t: 10, b: 22 };

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.append(e);
    return e;
  }

  // spanText words a span of time: "30 s", "2.5 min", "1 h".
  function spanText(ms) {
    const s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    return s < 3600 ? nf1.format(s / 60) + ' min' : nf1.format(s / 3600) + ' h';
  }

  // niceMax rounds up to 1, 2 or 5 × a power of ten.
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  class Chart {
    constructor(def) {
      this.def = def;
      const fig = document.createElement('figure');
      fig.className = 'chart';
      fig.id = def.id;
      const cap = document.createElement('figcaption');
      const title = document.createElement('span');
      title.className = 'title';
      title.id = def.id + '-title';
      title.textContent = def.title;
      cap.append(title);
      this.values = [];
      this.items = [];
      for (const s of def.series) {
        const item = document.createElement('span');
        item.className = 'legend ' + s.cls;
        const swatch = document.createElement('span');
        swatch.className = 'swatch';
        swatch.setAttribute('aria-hidden', 'true');
        const v = document.createElement('span');
        v.className = 'value';
        item.append(swatch, s.label + ' ', v);
        cap.append(item);
        this.values.push(v);
        this.items.push(item);
      }
      this.svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': def.id + '-title ' + def.id + '-desc' });
      this.desc = el('desc', { id: def.id + '-desc' }, this.svg);
      const grid = el('g', { class: 'grid' }, this.svg);
      this.yLabels = [];
      for (let i = 0; i <= 2; i++) {
        const y = PAD.t + ((H - PAD.t - PAD.b) * i) / 2;
        el('line', { x1: PAD.l, x2: W - PAD.r, y1: y, y2: y }, grid);
        const label = el('text', { x: PAD.l - 6, y: y + 4, class: 'ylabel' }, this.svg);
        this.yLabels.push(label);
      }
      this.xLabels = [];
      for (let m = 0; m <= 10; m++) {
        const x = PAD.l + ((W - PAD.l - PAD.r) * m) / 10;
        el('line', { x1: x, x2: x, y1: PAD.t, y2: H - PAD.b, class: m % 5 ? 'minor' : '' }, grid);
        if (m % 5 === 0) {
          this.xLabels.push(el('text', { x, y: H - 6, class: 'xlabel' + (m === 10 ? ' end' : m === 0 ? ' start' : '') }, this.svg));
        }
      }
      this.paths = def.series.map((s) => el('path', { class: 'line ' + s.cls, d: '' }, this.svg));
      this.empty = el('text', { x: W / 2, y: H / 2, class: 'empty' }, this.svg);
      fig.append(cap, this.svg);
      this.fig = fig;
    }

    // draw plots the samples (this tab's, or the server's history points)
    // of the chart's window. A series for adaptive rooms only (the
    // baseline) is left out for a room in mode fixed. data-points counts
    // the values drawn; data-first and data-last are the first and last
    // history points drawn (Unix ms on the server's clock).
    draw(samples, doc) {
      const now = Date.now();
      const span = state.windowMs;
      const x0 = now - span;
      this.xLabels.forEach((label, i) => {
        const text = i === 2 ? 'now' : '−' + spanText((span * (2 - i)) / 2);
        if (label.textContent !== text) label.textContent = text;
      });
      const series = this.def.series.map((ser, i) => ({ ser, i, off: !!ser.adaptive && !!doc && !adaptiveOn(doc) }));
      const on = series.filter((x) => !x.off);
      const { max, points, first, last } = this.extent(samples, x0, on);
      const top = niceMax(max);
      this.yLabels.forEach((label, i) => {
        label.textContent = nf1.format((top * (2 - i)) / 2);
      });
      const X = (t) => (PAD.l + ((t - x0) / span) * (W - PAD.l - PAD.r)).toFixed(1);
      const Y = (v) => (PAD.t + (H - PAD.t - PAD.b) * (1 - Math.min(v, top) / top)).toFixed(1);
      const lasts = [];
      for (const { ser, i, off } of series) {
        this.items[i].hidden = off;
        const d = off ? '' : linePath(samples, x0, ser, X, Y);
        if (this.paths[i].getAttribute('d') !== d) this.paths[i].setAttribute('d', d);
        if (off) continue;
        const lastSample = samples.length ? samples[samples.length - 1] : null;
        const current = lastSample && !lastSample.gap ? lastSample[ser.key] : null;
        const text = current === null || current === undefined ? dash : nf1.format(current) + (ser.unit || '');
        if (this.values[i].textContent !== text) this.values[i].textContent = text;
        lasts.push(ser.label + ' ' + text);
      }
      const missing = this.def.requires && !(doc && this.def.requires(doc));
      this.empty.textContent = missing ? 'not reported by this server' : points ? '' : 'waiting for samples…';
      Object.assign(this.fig.dataset, { points: String(points), first: first === null ? '' : String(first), last: last === null ? '' : String(last) });
      const desc = this.def.title + ' over the last ' + spanText(span) + ', scale 0 to ' + nf1.format(top) + '. Now: ' + lasts.join(', ') + '.';
      if (this.desc.textContent !== desc) this.desc.textContent = desc;
    }

    // extent is the largest value in the window, the number of values, and
    // the server times of the first and last points (null: none).
    extent(samples, x0, series) {
      let max = 0;
      let points = 0;
      let first = null;
      let last = null;
      for (const s of samples) {
        if (s.gap || s.t < x0) continue;
        for (const { ser } of series) {
          const v = s[ser.key];
          if (v !== null && v !== undefined) {
            max = Math.max(max, v);
            points++;
          }
        }
        if (s.st !== undefined) {
          if (first === null) first = s.st;
          last = s.st;
        }
      }
      return { max, points, first, last };
    }
  }

  // linePath is the SVG path of one series: lines break at gaps (a failed
  // sample, or points further apart than GAP_MS); a step series moves
  // across, then up or down.
  function linePath(samples, x0, ser, X, Y) {
    let d = '';
    let prev = null;
    for (const s of samples) {
      if (s.t < x0) continue;
      const v = s.gap ? null : s[ser.key];
      if (v === null || v === undefined) {
        prev = null;
        continue;
      }
      if (prev === null || s.t - prev.t > GAP_MS) {
        d += 'M' + X(s.t) + ' ' + Y(v);
      } else if (ser.step) {
        d += 'H' + X(s.t) + 'V' + Y(v);
      } else {
        d += 'L' + X(s.t) + ' ' + Y(v);
      }
      prev = s;
    }
    // A lone point is drawn as a short dash so it is visible.
    if (d && !/[LHV]/.test(d)) d += 'h2';
    return d;
  }

  const hasSignals = (d) => d.signals && typeof d.signals === 'object';
  const charts = [
    { id: 'chart-waiting', title: 'People waiting', series: [{ key: 'waiting', label: 'waiting', cls: 's1' }] },
    {
      id: 'chart-active', title: 'Active and admission limit', series: [
        { key: 'active', label: 'active', cls: 's1' },
        { key: 'target', label: 'limit', cls: 's2', step: true },
      ],
    },
    { id: 'chart-admitted', title: 'Admitted per second', series: [{ key: 'admittedPerSec', label: 'admitted/s', cls: 's1' }] },
    {
      id: 'chart-eta', title: 'Estimated wait shown (s)', series: [
        { key: 'etaLast', label: 'last in line', cls: 's1', unit: ' s' },
        { key: 'etaMid', label: 'middle', cls: 's2', unit: ' s' },
      ],
    },
    {
      id: 'chart-latency', title: 'Order latency p90 (ms)', requires: hasSignals, live: true, series: [
        { key: 'p90', label: 'p90', cls: 's1', unit: ' ms' },
        { key: 'baseline', label: 'baseline', cls: 's3', unit: ' ms', adaptive: true },
      ],
    },
    { id: 'chart-errors', title: 'Order errors (% of orders)', requires: hasSignals, live: true, series: [{ key: 'errorPct', label: 'error rate', cls: 's4', unit: ' %' }] },
  ].map((def) => new Chart(def));

  // ---- controls ------------------------------------------------------------

  // fill shows the server's value in an input unless the operator is editing it.
  function fill(id, value) {
    const input = $(id);
    if (state.dirty.has(id) || document.activeElement === input) return;
    const v = value === null || value === undefined ? '' : String(value);
    if (input.value !== v) input.value = v;
  }

  function toLocalInput(iso) {
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return '';
    const d = new Date(t);
    const p = (n) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  function renderControls(d) {
    $('controls').hidden = !d;
    if (!d) return;
    fill('target-input', num(d.targetActive));
    fill('ttl-input', num(d.entryTtlSeconds));
    setText('pause-state', d.paused ? 'Paused' : 'Running');
    setText('pause-btn', d.paused ? 'Resume admission' : 'Pause admission');
    $('pause-btn').dataset.paused = String(!!d.paused);

    $('mode-form').hidden = !has(d, 'mode');
    if (has(d, 'mode')) {
      fill('mode-input', d.mode);
      fill('min-input', num(d.minActive));
      fill('max-input', num(d.maxActive));
    }
    boundsShown(d);
    $('method-form').hidden = !has(d, 'method');
    if (has(d, 'method')) fill('method-input', d.method);
    $('schedule-form').hidden = !has(d, 'opensAt');
    if (has(d, 'opensAt')) {
      fill('opens-input', d.opensAt ? toLocalInput(d.opensAt) : '');
      setText('opens-help', d.opensAt
        ? 'Scheduled: ' + opensText(d.opensAt) + ' — ' + d.opensAt + (has(d, 'preQueue') ? '; ' + fmt(d.preQueue) + ' in the pre-queue' : '')
        : 'No opening time: the room is open. Leave empty and Clear to remove a schedule.');
    }
    $('parts-form').hidden = !has(d, 'prequeueParts');
    if (has(d, 'prequeueParts')) fill('parts-input', String(d.prequeueParts));
    $('message-form').hidden = !has(d, 'message');
    if (has(d, 'message')) fill('message-input', d.message || '');
    $('texts-form').hidden = !has(d, 'displayName') || !has(d, 'description');
    if (!$('texts-form').hidden) {
      fill('display-input', d.displayName || '');
      fill('description-input', d.description || '');
    }
  }

  // boundsShown shows the adaptive bounds only while the mode chosen in the
  // form is adaptive: a fixed room has just its limit.
  function boundsShown(d) {
    const adaptive = $('mode-input').value === 'adaptive';
    $('min-field').hidden = !has(d, 'minActive') || !adaptive;
    $('max-field').hidden = !has(d, 'maxActive') || !adaptive;
  }

  function intOf(id) {
    const s = $(id).value.trim();
    if (s === '') return null;
    const n = Number(s);
    return Number.isInteger(n) ? n : NaN;
  }

  // say reports in a panel's live region: control-msg, or gateway-msg.
  function say(text, isError, id = 'control-msg') {
    const m = $(id);
    m.textContent = text;
    m.classList.toggle('error', !!isError);
    m.setAttribute('role', isError ? 'alert' : 'status');
  }

  // put sends only the given fields, and only those the room's document has.
  async function put(fields, inputs, what) {
    const r = currentRoom();
    if (!r) return;
    const body = {};
    for (const [k, v] of Object.entries(fields)) {
      if (has(r.doc, k) && r.doc[k] !== v) body[k] = v;
    }
    if (!Object.keys(body).length) {
      say('Nothing to change: ' + what + ' is already as shown.');
      for (const id of inputs) state.dirty.delete(id);
      return;
    }
    await send(r.doc.room, body, inputs);
  }

  async function send(room, body, inputs, msg = 'control-msg') {
    const buttons = [...document.querySelectorAll('#controls button, #gateway button')];
    buttons.forEach((b) => (b.disabled = true));
    try {
      const doc = await api('PUT', roomPath(room), body);
      for (const id of inputs) state.dirty.delete(id);
      const r = state.rooms.get(room);
      if (r && doc && doc.room === room) {
        r.doc = doc;
        r.savedAt = Date.now();
      }
      say('Saved ' + room + ': ' + saved(body) + '.', false, msg);
      render();
      pullSide();
    } catch (e) {
      if (e.status === 401) {
        refused(e.message);
      } else {
        say('Not saved: ' + e.message + (e.status ? ' (' + e.status + ')' : '') + '.', true, msg);
      }
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  // saved words a sent body: "targetActive = 2"; a gateway object by its
  // fields, "challenge = pow, difficulty = 10".
  function saved(body) {
    return Object.entries(body).map(([k, v]) => {
      if (k === 'gateway' && v && typeof v === 'object') return saved(v);
      if (Array.isArray(v)) return k + ' = ' + (v.length ? v.join('; ') : 'none');
      if (k === 'protect' && v === null) return k + " = WR_PROTECT's routes";
      return k + ' = ' + (v === null || v === '' ? 'none' : v);
    }).join(', ');
  }

  function onSubmit(id, handler) {
    $(id).addEventListener('submit', (ev) => {
      ev.preventDefault();
      handler();
    });
  }

  function wire() {
    for (const input of document.querySelectorAll('#controls input, #controls select, #controls textarea, #gateway input, #gateway select, #gateway textarea')) {
      input.addEventListener('input', () => state.dirty.add(input.id));
    }
    wireControls();
    wireTexts();
    wireGateway();
    wireAccess();
    wireNavigation();
  }

  // wireControls wires the room's controls; the changes that stop a sale
  // (a limit of 0, pausing, the method reject) ask first.
  function wireControls() {
    onSubmit('target-form', async () => {
      const n = intOf('target-input');
      if (n === null || Number.isNaN(n)) return say('The admission limit must be a whole number.', true);
      const r = currentRoom();
      if (n === 0 && r && r.doc.targetActive !== 0 && !(await confirmFirst(asks.limitZero(r.doc)))) return cancelled();
      put({ targetActive: n }, ['target-input'], 'the admission limit');
    });
    onSubmit('ttl-form', () => {
      const n = intOf('ttl-input');
      if (n === null || Number.isNaN(n)) return say('The entry window must be a whole number of seconds.', true);
      const r = currentRoom();
      if (r && num(r.doc.entryTtlSeconds) === n) return say('Nothing to change: the entry window is already ' + n + ' s.');
      if (r) send(r.doc.room, { entryTtl: n + 's' }, ['ttl-input']);
    });
    $('pause-btn').addEventListener('click', async () => {
      const r = currentRoom();
      if (!r) return;
      const pause = !r.doc.paused;
      if (pause && !(await confirmFirst(asks.pause(r.doc)))) return cancelled();
      send(r.doc.room, { paused: pause }, []);
    });
    onSubmit('mode-form', () => {
      const fields = { mode: $('mode-input').value };
      for (const [id, key] of [['min-input', 'minActive'], ['max-input', 'maxActive']]) {
        const n = intOf(id);
        if (Number.isNaN(n)) return say(key + ' must be a whole number.', true);
        if (n !== null) fields[key] = n;
      }
      put(fields, ['mode-input', 'min-input', 'max-input'], 'the mode');
    });
    $('mode-input').addEventListener('change', () => {
      const r = currentRoom();
      if (r) boundsShown(r.doc);
    });
    onSubmit('method-form', async () => {
      const m = $('method-input').value;
      const r = currentRoom();
      if (m === 'reject' && r && r.doc.method !== 'reject' && !(await confirmFirst(asks.reject(r.doc)))) return cancelled();
      put({ method: m }, ['method-input'], 'the method');
    });
    onSubmit('schedule-form', () => {
      const v = $('opens-input').value;
      if (!v) return say('Choose a date and time, or Clear to remove the schedule.', true);
      const t = new Date(v); // datetime-local is the browser's local time
      if (Number.isNaN(t.getTime())) return say('That is not a date and time.', true);
      put({ opensAt: t.toISOString().replace(/\.\d{3}Z$/, 'Z') }, ['opens-input'], 'the opening time');
    });
    onSubmit('parts-form', () => {
      const n = Number($('parts-input').value);
      if (!Number.isInteger(n) || n < 1 || n > 16) return say('Pre-queue parts must be a whole number from 1 to 16.', true);
      put({ prequeueParts: n }, ['parts-input'], 'the pre-queue parts');
    });
    $('opens-clear').addEventListener('click', () => {
      state.dirty.delete('opens-input');
      $('opens-input').value = '';
      put({ opensAt: null }, ['opens-input'], 'the schedule');
    });
  }

  // wireNavigation wires the choice of room and chart window, the creation
  // of a room, and the token.
  function wireNavigation() {
    $('room-select').addEventListener('change', (ev) => selectRoom(ev.target.value));
    $('window-select').addEventListener('change', (ev) => {
      state.windowMs = Number(ev.target.value) * 1000;
      const label = ev.target.selectedOptions[0].textContent;
      $('charts-h').textContent = 'Last ' + label.replace(/^1 /, '');
      render();
    });
    // The search lists the rooms whose name starts with what is typed,
    // from the next sample on (within a second).
    $('room-search').addEventListener('input', (ev) => {
      const v = ev.target.value.trim().toLowerCase();
      if (v && !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(v)) return say('Room names are 1–64 of a–z, 0–9, - and _.', true);
      say('');
      state.search = v;
    });
    $('rooms-table').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-room]');
      if (b) selectRoom(b.dataset.room);
    });
    onSubmit('create-form', async () => {
      const name = $('create-input').value.trim();
      if (!/^[a-z0-9_-]{1,64}$/.test(name)) return say('Room names are 1–64 of a–z, 0–9, - and _.', true);
      try {
        const doc = await api('PUT', roomPath(name), {});
        state.rooms.set(name, newRoom(doc));
        if (!state.names.includes(name)) state.names.push(name);
        $('create-input').value = '';
        selectRoom(name);
        say('Created room ' + name + '.');
        pullSide();
      } catch (e) {
        if (e.status === 401) refused(e.message);
        else say('Not created: ' + e.message + '.', true);
      }
    });

    onSubmit('token-form', () => {
      const token = $('token-input').value.trim();
      if (token) connect(token);
    });
    $('forget-btn').addEventListener('click', () => {
      state.token = '';
      sessionStorage.removeItem(TOKEN_KEY);
      setConn('idle');
      askToken('');
    });
    window.addEventListener('hashchange', () => {
      state.room = '';
      render();
    });
  }

  // ---- gateway (gateway mode only) -------------------------------------------

  const gatewayOf = (d) => (has(d, 'gateway') && d.gateway && typeof d.gateway === 'object' ? d.gateway : null);
  const routesOf = (v) => (Array.isArray(v) ? v.filter((s) => typeof s === 'string') : null);
  const sameRoutes = (a, b) => [...a].sort().join('\n') === [...b].sort().join('\n');

  // durText words a duration as the server gives it: "10m (600 s)".
  function durText(text, seconds) {
    if (typeof text !== 'string' || !text) return dash;
    return num(seconds) === null ? text : text + ' (' + fmt(seconds) + ' s)';
  }

  function renderGateway(d) {
    const g = gatewayOf(d);
    $('gateway').hidden = !g;
    if (!g) return;
    setText('g-challenge', has(g, 'challenge') ? (g.challenge === 'pow' ? 'pow (proof of work)' : String(g.challenge)) : dash);
    setText('g-difficulty', num(g.difficulty) === null ? dash : fmt(g.difficulty) + ' bits');
    setText('g-pass', has(g, 'pass') ? String(g.pass) : dash);
    setText('g-session-ttl', durText(g.sessionTtl, g.sessionTtlSeconds));
    setText('g-session-max', durText(g.sessionMaxTtl, g.sessionMaxTtlSeconds));
    setText('g-protect-from', { WR_PROTECT: "WR_PROTECT (the server's)", room: "this room's own" }[g.protectFrom] || (has(g, 'protectFrom') ? String(g.protectFrom) : dash));
    const routes = routesOf(g.protect);
    renderRoutes(routes);

    $('challenge-form').hidden = !has(g, 'challenge');
    $('difficulty-field').hidden = !has(g, 'difficulty');
    $('pass-form').hidden = !has(g, 'pass');
    $('session-ttl-field').hidden = !has(g, 'sessionTtl');
    $('session-max-field').hidden = !has(g, 'sessionMaxTtl');
    $('protect-form').hidden = !routes;
    fill('challenge-input', g.challenge);
    fill('difficulty-input', num(g.difficulty));
    fill('pass-input', g.pass);
    fill('session-ttl-input', g.sessionTtl);
    fill('session-max-input', g.sessionMaxTtl);
    fill('protect-input', routes ? routes.join('\n') : '');
  }

  // renderRoutes lists the protected routes; the list is rebuilt only when
  // they change.
  function renderRoutes(routes) {
    const dd = $('g-protect');
    const key = routes ? routes.join('\n') : dash;
    if (dd.dataset.key === key) return;
    dd.dataset.key = key;
    if (!routes || !routes.length) {
      dd.textContent = routes ? 'none' : dash;
      return;
    }
    const ul = document.createElement('ul');
    for (const r of routes) {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = r;
      li.append(code);
      ul.append(li);
    }
    dd.replaceChildren(ul);
  }

  // sameGateway tells whether v is already the room's gateway setting k.
  function sameGateway(g, k, v) {
    if (k === 'protect') {
      if (v === null) return g.protectFrom === 'WR_PROTECT';
      return g.protectFrom !== 'WR_PROTECT' && sameRoutes(routesOf(g.protect) || [], v);
    }
    if (k === 'sessionTtl' || k === 'sessionMaxTtl') return v === g[k] || v === g[k + 'Seconds'];
    return g[k] === v;
  }

  // putGateway sends, as the room's "gateway" object, only the given fields
  // that differ from the room's and that its gateway object has.
  async function putGateway(fields, inputs, what) {
    const r = currentRoom();
    const g = r ? gatewayOf(r.doc) : null;
    if (!g) return;
    const body = {};
    for (const [k, v] of Object.entries(fields)) {
      if (has(g, k) && !sameGateway(g, k, v)) body[k] = v;
    }
    if (!Object.keys(body).length) {
      say('Nothing to change: ' + what + ' is already as shown.', false, 'gateway-msg');
      for (const id of inputs) state.dirty.delete(id);
      return;
    }
    await send(r.doc.room, { gateway: body }, inputs, 'gateway-msg');
  }

  // durationOf reads a session time: a number of seconds, or a duration
  // such as "10m" sent as typed (the server checks it and names the field).
  function durationOf(id) {
    const s = $(id).value.trim();
    if (s === '') return null;
    return /^\d+$/.test(s) ? Number(s) : s;
  }

  function wireGateway() {
    const sayGw = (text) => say(text, true, 'gateway-msg');
    onSubmit('challenge-form', () => {
      const fields = { challenge: $('challenge-input').value };
      const n = intOf('difficulty-input');
      if (Number.isNaN(n)) return sayGw('The difficulty must be a whole number.');
      if (n !== null) fields.difficulty = n;
      putGateway(fields, ['challenge-input', 'difficulty-input'], 'the challenge');
    });
    onSubmit('pass-form', () => {
      const fields = { pass: $('pass-input').value };
      for (const [id, key] of [['session-ttl-input', 'sessionTtl'], ['session-max-input', 'sessionMaxTtl']]) {
        const v = durationOf(id);
        if (v !== null) fields[key] = v;
      }
      putGateway(fields, ['pass-input', 'session-ttl-input', 'session-max-input'], 'the pass');
    });
    onSubmit('protect-form', () => {
      const routes = $('protect-input').value.split('\n').map((s) => s.trim()).filter(Boolean);
      putGateway({ protect: routes }, ['protect-input'], 'the protected routes');
    });
    $('protect-reset').addEventListener('click', () => {
      state.dirty.delete('protect-input');
      putGateway({ protect: null }, ['protect-input'], "the routes' source");
    });
  }

  // ---- confirmations -----------------------------------------------------------

  // confirmFirst asks in the modal dialog and resolves to whether the
  // operator confirmed. Cancel has the focus, so Enter alone cancels;
  // Escape cancels; the focus goes back where it was.
  function confirmFirst(ask) {
    const d = $('confirm');
    if (d.open) return Promise.resolve(false);
    setText('confirm-h', ask.title);
    setText('confirm-text', ask.text);
    setText('confirm-ok', ask.ok);
    const back = document.activeElement;
    d.returnValue = '';
    d.showModal();
    $('confirm-cancel').focus();
    return new Promise((resolve) => {
      d.addEventListener('close', () => {
        if (back && typeof back.focus === 'function') back.focus();
        resolve(d.returnValue === 'ok');
      }, { once: true });
    });
  }

  const waitingText = (d) => (num(d.waiting) === null ? 'the people waiting' : 'the ' + fmt(d.waiting) + (d.waiting === 1 ? ' person' : ' people') + ' waiting');

  // asks are the questions before the changes that stop a sale.
  const asks = {
    pause: (d) => ({
      title: 'Pause admission in ' + d.room + '?',
      text: 'Nobody is admitted until you resume; newcomers still join the line, and ' + waitingText(d) + ' keep their place and are told the sale is paused. To turn arrivals away, close the room (method reject).',
      ok: 'Pause admission',
    }),
    reject: (d) => ({
      title: 'Close ' + d.room + ' (method reject)?',
      text: 'Everyone who tries to enter is refused as closed or sold out (423) and nobody is admitted; ' + waitingText(d) + ' keep their place until you choose another method.',
      ok: 'Close the room',
    }),
    limitZero: (d) => ({
      title: 'Set the admission limit of ' + d.room + ' to 0?',
      text: 'Nobody more is admitted until the limit is raised; ' + waitingText(d) + ' keep waiting, and those already admitted keep their entry.',
      ok: 'Set the limit to 0',
    }),
  };

  function cancelled() {
    say('Cancelled: nothing changed.');
  }

  // ---- what waiting users read -----------------------------------------------

  function wireTexts() {
    onSubmit('message-form', () => {
      const v = $('message-input').value.trim();
      if (!v) return say('Type a message, or Clear message to remove it.', true);
      put({ message: v }, ['message-input'], 'the message');
    });
    $('message-clear').addEventListener('click', () => {
      state.dirty.delete('message-input');
      $('message-input').value = '';
      put({ message: '' }, ['message-input'], 'the message');
    });
    onSubmit('texts-form', () => put({
      displayName: $('display-input').value.trim(),
      description: $('description-input').value.trim(),
    }, ['display-input', 'description-input'], 'the name and description'));
  }

  // durWords words a number of seconds: "45 s", "3 min 20 s", "1 h 5 min".
  function durWords(sec) {
    const s = Math.max(0, Math.round(sec));
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }

  function longestText(rs) {
    if (!rs) return dash;
    const secs = num(rs.longestWaitSeconds);
    if (secs === null) return rs.waiting > 0 ? 'not known yet' : 'nobody waiting';
    return (rs.longestWaitAtLeast ? 'at least ' : '') + durWords(secs);
  }

  // etaText words the median ETA shown, or why none is shown.
  function etaText(rs, d) {
    if (!rs) return dash;
    const secs = num(rs.medianEtaSeconds);
    if (secs !== null) return 'about ' + durWords(secs);
    if (!(rs.waiting > 0)) return 'nobody waiting';
    if (rs.paused) return 'none: paused (users are told the sale is paused)';
    if (d.method === 'reject') return 'none: closed (method reject)';
    if (rs.etaWithheld === 'nobody') return 'none: the room admits nobody (limit 0)';
    return 'none yet: measuring how long orders take and how many admitted users never order (users see "estimating…")';
  }

  // basisText words what the estimate rests on (GET /admin/stats' estimate).
  function basisText(rs) {
    const e = rs && rs.estimate;
    if (!e || num(e.holdSeconds) === null) return dash;
    return 'a slot held ' + nf2.format(e.holdSeconds) + ' s by a buyer · ' + pct(e.noShowShare) + ' never order · ' +
      pct(e.departShare) + ' leave while waiting · settles at ' + nf2.format(e.ratePerSecond) + ' admitted/s';
  }

  // etaErrorText words how far the estimates were from the waits that
  // followed, over the last hour.
  function etaErrorText(rs) {
    if (!rs) return dash;
    const e = rs.etaError;
    if (!e || !(e.count > 0)) return 'none judged yet (an estimate is judged when its user has had their turn)';
    const dir = e.medianSignedSeconds > 0 ? 'longer' : 'shorter';
    return 'off by ' + Math.round(e.medianAbsPctError) + ' % on median (p90 ' + Math.round(e.p90AbsPctError) + ' %) over ' +
      fmt(e.count) + ' estimates; the median one promised ' + durWords(Math.abs(e.medianSignedSeconds)) + ' ' + dir + ' than the wait';
  }

  const transports = { sse: 'SSE', ws: 'WebSocket' };

  // countsText words counts by name: "SSE 3 · WebSocket 1"; most first
  // when sorted.
  function countsText(counts, names, sorted) {
    if (!counts || typeof counts !== 'object') return dash;
    const list = Object.entries(counts).filter(([, v]) => num(v) !== null);
    if (sorted) list.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    return list.length ? list.map(([k, v]) => (names[k] || k) + ' ' + fmt(v)).join(' · ') : 'none';
  }

  function poolText(p) {
    if (!p || num(p.count) === null) return dash;
    if (!p.count) return 'no connection taken yet';
    return nf2.format(num(p.meanSeconds) * 1000) + ' ms on average over ' + fmt(p.count) + ' connections taken';
  }

  // renderUsers fills "What waiting users see" from the room's document
  // and GET /admin/stats.
  function renderUsers(d) {
    $('users').hidden = !d;
    if (!d) return;
    const s = state.stats;
    const rs = s && Array.isArray(s.rooms) ? s.rooms.find((x) => x && x.room === d.room) || null : null;
    setText('u-longest', longestText(rs));
    setText('u-eta', etaText(rs, d));
    setText('u-basis', basisText(rs));
    setText('u-eta-error', etaErrorText(rs));
    setText('u-name', !has(d, 'displayName') ? dash : d.displayName || d.room + ' (its id: no display name set)');
    setText('u-message', !has(d, 'message') ? dash : d.message || 'none');
    setText('i-streams', countsText(s && s.streams, transports, false));
    setText('i-limited', countsText(s && s.rateLimited, {}, true));
    setText('i-pool', poolText(s && s.poolAcquireWait));
  }

  // ---- the shop (gateway and forward-auth modes) -----------------------------

  // noteShop keeps a read of the stats' shop, with those of the last
  // SHOP_WINDOW_MS (and always the one before it): the changes shown are
  // the newest read minus the oldest kept.
  function noteShop(shop, t) {
    if (!shop || typeof shop !== 'object') {
      state.shopReads = [];
      return;
    }
    const reads = state.shopReads;
    reads.push({ t, shop });
    while (reads.length > 2 && reads[1].t <= t - SHOP_WINDOW_MS) reads.shift();
  }

  const countOf = (m, k) => (m && typeof m === 'object' ? num(m[k]) : null);

  // shopChange is the newest read's count minus the oldest kept one's
  // (null with a single read, or when the instance restarted between).
  function shopChange(pick) {
    const reads = state.shopReads;
    if (reads.length < 2) return null;
    const a = pick(reads[0].shop);
    const b = pick(reads[reads.length - 1].shop);
    return a === null || b === null || b < a ? null : b - a;
  }

  const refusedOutcomes = ['ambiguous', 'invalid_path', 'bad_request', 'untrusted_proxy', 'too_large'];

  // sumOf adds the shop's requests of outcomes.
  function sumOf(shop, outcomes) {
    const req = shop && shop.requests;
    if (!req || typeof req !== 'object') return null;
    return outcomes.reduce((n, k) => n + (num(req[k]) || 0), 0);
  }

  // countText words a count since the start and its change over the
  // window: "12 (+3)".
  function countText(shop, pick) {
    const v = pick(shop);
    if (v === null) return dash;
    const d = shopChange(pick);
    return fmt(v) + (d === null ? '' : ' (+' + fmt(d) + ')');
  }

  // bucketQuantile is the q-quantile of count observations in cumulative
  // buckets ({ leSeconds, count }), linear within a bucket as the server's
  // (and Prometheus's histogram_quantile); null without observations.
  function bucketQuantile(q, buckets, count) {
    if (!count || !buckets.length) return null;
    const rank = q * count;
    let lower = 0;
    let below = 0;
    for (const b of buckets) {
      if (b.count >= rank) return b.count > below ? lower + ((b.leSeconds - lower) * (rank - below)) / (b.count - below) : b.leSeconds;
      lower = b.leSeconds;
      below = b.count;
    }
    return buckets[buckets.length - 1].leSeconds;
  }

  const bucketsOf = (lat) => (lat && Array.isArray(lat.buckets)
    ? lat.buckets.filter((b) => b && num(b.leSeconds) !== null && num(b.count) !== null) : []);

  // recentLatency is p50 and p90 of the answers between the oldest read
  // kept and the newest: null when none came (or the bounds differ).
  function recentLatency() {
    const reads = state.shopReads;
    if (reads.length < 2) return null;
    const a = reads[0].shop.latency;
    const b = reads[reads.length - 1].shop.latency;
    const bb = bucketsOf(b);
    // Before its first answer the instance has no buckets: all at 0.
    const ab = num(a && a.count) ? bucketsOf(a) : bb.map((x) => ({ leSeconds: x.leSeconds, count: 0 }));
    const n = (num(b && b.count) || 0) - (num(a && a.count) || 0);
    if (n <= 0 || ab.length !== bb.length) return null;
    const diff = [];
    for (let i = 0; i < bb.length; i++) {
      if (ab[i].leSeconds !== bb[i].leSeconds || bb[i].count < ab[i].count) return null;
      diff.push({ leSeconds: bb[i].leSeconds, count: bb[i].count - ab[i].count });
    }
    return { p50: bucketQuantile(0.5, diff, n), p90: bucketQuantile(0.9, diff, n), count: n };
  }

  const msText = (sec) => (num(sec) === null ? dash : nf1.format(sec * 1000) + ' ms');

  function latencyText(shop) {
    const recent = recentLatency();
    if (recent) return msText(recent.p50) + ' / ' + msText(recent.p90) + ' (last minute, ' + fmt(recent.count) + ' answers)';
    const lat = shop.latency;
    if (!lat || !num(lat.count)) return 'no answer yet';
    return msText(lat.p50Seconds) + ' / ' + msText(lat.p90Seconds) + ' (since the start, ' + fmt(lat.count) + ' answers)';
  }

  // shopVerdict is the shop's state: failing when the origin check says
  // unreachable or errors, or 5xx, bad gateways or timeouts rose over the
  // window; healthy otherwise; blind in forward auth.
  function shopVerdict(shop) {
    if (!shop.originVisible) return { state: 'blind', text: "Forward auth: decisions only, the origin's answers are not visible here." };
    const why = [];
    const check = typeof shop.origin === 'string' ? shop.origin : '';
    if (check && check !== 'ok') why.push('the origin check says ' + check);
    const rises = [
      [shopChange((x) => countOf(x.answers, '5xx')), '5xx answer'],
      [shopChange((x) => countOf(x.requests, 'bad_gateway')), 'bad gateway'],
      [shopChange((x) => countOf(x.requests, 'timeout')), 'timeout'],
    ];
    for (const [d, what] of rises) {
      if (d > 0) why.push(fmt(d) + ' ' + what + (d === 1 ? '' : 's') + ' in the last minute');
    }
    if (why.length) return { state: 'failing', text: 'Failing: ' + why.join('; ') + '.' };
    const n = shopChange((x) => sumOf(x, ['forwarded']));
    return { state: 'healthy', text: 'Healthy: the origin answers' + (n === null ? '' : ' (' + fmt(n) + ' answers in the last minute, none failed)') + '.' };
  }

  // renderShop fills the shop's panel from the stats' shop (hidden when the
  // instance has none: neither gateway nor forward auth).
  function renderShop() {
    const s = state.stats;
    const shop = s && s.shop && typeof s.shop === 'object' ? s.shop : null;
    $('shop').hidden = !shop;
    if (!shop) return;
    const v = shopVerdict(shop);
    $('shop').dataset.state = v.state;
    setText('shop-state', v.text);
    const visible = !!shop.originVisible;
    $('shop-blind').hidden = visible;
    $('shop-origin').hidden = !visible;
    $('d-allowed-row').hidden = visible;
    if (visible) {
      setText('o-check', typeof shop.origin === 'string' ? shop.origin : dash);
      $('o-check').classList.toggle('alert', typeof shop.origin === 'string' && shop.origin !== 'ok');
      setText('o-latency', latencyText(shop));
      for (const c of ['2xx', '3xx', '4xx', '5xx']) setText('o-' + c, countText(shop, (x) => countOf(x.answers, c)));
      setText('o-bad-gateway', countText(shop, (x) => countOf(x.requests, 'bad_gateway')));
      setText('o-timeout', countText(shop, (x) => countOf(x.requests, 'timeout')));
      const capped = sumOf(shop, ['tunnels_per_address', 'tunnels_total']);
      setText('o-tunnels', fmt(shop.tunnels) + (capped ? ' (' + fmt(capped) + ' refused at the caps)' : ''));
      for (const [id, pick] of [['o-5xx', (x) => countOf(x.answers, '5xx')], ['o-bad-gateway', (x) => countOf(x.requests, 'bad_gateway')],
        ['o-timeout', (x) => countOf(x.requests, 'timeout')]]) {
        $(id).classList.toggle('alert', shopChange(pick) > 0);
      }
    }
    setText('d-allowed', countText(shop, (x) => countOf(x.requests, 'allowed')));
    setText('d-passed', countText(shop, (x) => num(x.passed)));
    setText('d-no-pass', countText(shop, (x) => countOf(x.requests, 'no_pass')));
    setText('d-rate-limited', countText(shop, (x) => countOf(x.requests, 'rate_limited')));
    const refusedBy = {};
    for (const k of refusedOutcomes) if (countOf(shop.requests, k)) refusedBy[k] = shop.requests[k];
    const total = countText(shop, (x) => sumOf(x, refusedOutcomes));
    setText('d-refused', total + (Object.keys(refusedBy).length ? ': ' + countsText(refusedBy, {}, true) : ''));
  }

  // ---- stats, access lists and audit log ---------------------------------------

  // optional reads a resource the server may not have: null when it has
  // not (404, 405), undefined when the read failed for now; a refused token
  // is thrown.
  async function optional(path) {
    try {
      return await api('GET', path);
    } catch (e) {
      if (e.status === 401) throw e;
      return e.status === 404 || e.status === 405 ? null : undefined;
    }
  }

  // pullSide reads the stats, the audit log and the access lists (one read
  // at a time); a failed read keeps what was shown.
  async function pullSide() {
    if (state.side || !state.token) return;
    state.side = true;
    const seq = state.accessSeq;
    try {
      // Stats of the selected room only: each room costs the server a few
      // reads, and the panel shows one.
      const statsPath = '/admin/stats' + (state.room ? '?room=' + encodeURIComponent(state.room) : '');
      const [stats, audit, access] = await Promise.all([statsPath, '/admin/audit?limit=' + AUDIT_LIMIT, '/admin/access'].map(optional));
      if (!state.running) return;
      if (stats !== undefined) {
        state.stats = stats;
        noteShop(stats && stats.shop, Date.now());
      }
      if (audit !== undefined) state.audit = audit && Array.isArray(audit.entries) ? audit.entries : null;
      if (access !== undefined && seq === state.accessSeq) state.access = access;
      render();
    } catch (e) {
      failed(e);
    } finally {
      state.side = false;
    }
  }

  const LISTS = ['deny', 'allow', 'bypass'];

  function renderAccess() {
    const a = state.access;
    $('access').hidden = !a;
    if (!a) return;
    for (const name of LISTS) renderEntries(name, Array.isArray(a[name]) ? [...a[name]].sort() : []);
  }

  // renderEntries lists one access list (sorted), each entry with its
  // Remove button; the list is rebuilt only when it changes.
  function renderEntries(name, entries) {
    const ul = $(name + '-list');
    $(name + '-empty').hidden = entries.length > 0;
    const key = JSON.stringify(entries);
    if (ul.dataset.key === key) return;
    ul.dataset.key = key;
    ul.replaceChildren(...entries.map((entry) => {
      const li = document.createElement('li');
      const code = document.createElement('code');
      code.textContent = entry;
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'secondary small';
      b.textContent = 'Remove';
      b.dataset.list = name;
      b.dataset.entry = entry;
      b.setAttribute('aria-label', 'Remove ' + entry + ' from ' + name);
      li.append(code, ' ', b);
      return li;
    }));
  }

  // changeList adds an entry to a list or removes it: the lists are read
  // afresh, so that a change made meanwhile by someone else is kept, and
  // the one list is sent whole (PUT /admin/access replaces the lists it is
  // given). The server checks the entries; its message is shown.
  async function changeList(name, entry, add) {
    const sayAcl = (text, isError) => say(text, isError, 'access-msg');
    const buttons = [...document.querySelectorAll('#access button')];
    buttons.forEach((b) => (b.disabled = true));
    state.accessSeq++;
    try {
      const cur = await api('GET', '/admin/access');
      const list = Array.isArray(cur && cur[name]) ? cur[name] : [];
      state.access = cur;
      if (add === list.includes(entry)) {
        renderAccess();
        return sayAcl(entry + (add ? ' is already in ' : ' is not in ') + name + '.');
      }
      state.access = await api('PUT', '/admin/access', { [name]: add ? [...list, entry] : list.filter((e) => e !== entry) });
      state.accessSeq++;
      if (add) $(name + '-input').value = '';
      renderAccess();
      sayAcl((add ? 'Added ' + entry + ' to ' : 'Removed ' + entry + ' from ') + name + '.');
      pullSide();
    } catch (e) {
      if (e.status === 401) return refused(e.message);
      sayAcl('Not saved: ' + e.message + (e.status ? ' (' + e.status + ')' : '') + '.', true);
    } finally {
      buttons.forEach((b) => (b.disabled = false));
      if (!add && document.activeElement === document.body) $(name + '-input').focus();
    }
  }

  function wireAccess() {
    for (const name of LISTS) {
      onSubmit(name + '-form', () => {
        const entry = $(name + '-input').value.trim();
        if (!entry) return say('Type an entry to add to ' + name + '.', true, 'access-msg');
        changeList(name, entry, true);
      });
    }
    $('access').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-entry]');
      if (b) changeList(b.dataset.list, b.dataset.entry, false);
    });
  }

  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

  function renderAudit() {
    const entries = state.audit;
    $('audit').hidden = !entries;
    if (!entries) return;
    $('audit-empty').hidden = entries.length > 0;
    const body = $('audit-table').tBodies[0];
    const key = entries.map((e) => e.at + ' ' + e.path).join('\n');
    if (body.dataset.key === key) return;
    body.dataset.key = key;
    body.replaceChildren(...entries.filter(isObj).map(auditRow));
  }

  // auditRow is one change: when, who (the token's fingerprint and the
  // address), what (method and path) and its fields before → after.
  function auditRow(e) {
    const tr = document.createElement('tr');
    const cell = (...nodes) => {
      const td = document.createElement('td');
      td.append(...nodes);
      tr.append(td);
      return td;
    };
    const time = document.createElement('time');
    time.dateTime = String(e.at);
    time.textContent = Number.isNaN(Date.parse(e.at)) ? String(e.at) : new Date(e.at).toLocaleString();
    cell(time);
    cell('token ' + e.token + ' from ' + e.addr);
    const what = document.createElement('code');
    what.textContent = e.method + ' ' + e.path;
    cell(what);
    const ul = document.createElement('ul');
    for (const line of changeLines(e)) {
      const li = document.createElement('li');
      li.textContent = line;
      ul.append(li);
    }
    cell(ul).className = 'change';
    return tr;
  }

  // Fields of a room's document that move by themselves: not changes.
  const LIVE_FIELDS = new Set(['waiting', 'active', 'admissionRate', 'servingTicket', 'entered', 'admitted', 'expired', 'left', 'abandoned', 'signals', 'lastChange', 'preQueue']);

  // changeLines words a change: for each field the request set (nested
  // fields as gateway.pass), its value before → after, and lists as the
  // entries added and removed; when the body cannot be read (cut), the
  // fields whose values differ.
  function changeLines(e) {
    const before = isObj(e.before) ? e.before : null;
    const after = isObj(e.after) ? e.after : null;
    let body = null;
    try {
      body = JSON.parse(e.body);
    } catch (_) {
      // a body cut at 2 KiB, or not JSON: compared below instead
    }
    if (e.method === 'DELETE') return [e.after === null ? (String(e.path).endsWith('?force=true') ? 'deleted, with the users in it' : 'deleted') : 'not deleted'];
    const lines = e.before === null && after ? ['created'] : [];
    const paths = isObj(body) ? leaves(body, []) : differing(before, after);
    for (const p of paths) lines.push(changeOf(p, before, after));
    if (e.bodyTruncated) lines.push('(the request body was cut at 2 KiB)');
    return lines.length ? lines : ['no field changed'];
  }

  // leaves are the paths of an object's values, inside nested objects.
  function leaves(o, at) {
    return Object.entries(o).flatMap(([k, v]) => (isObj(v) ? leaves(v, [...at, k]) : [[...at, k]]));
  }

  function differing(before, after) {
    if (!before || !after) return [];
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].filter((k) => !LIVE_FIELDS.has(k) && JSON.stringify(before[k]) !== JSON.stringify(after[k])).map((k) => [k]);
  }

  function changeOf(path, before, after) {
    const dig = (o) => path.reduce((v, k) => (isObj(v) ? v[k] : undefined), o);
    const b = dig(before);
    const a = dig(after);
    const name = path.join('.');
    if (Array.isArray(a) || Array.isArray(b)) {
      const was = Array.isArray(b) ? b : [];
      const now = Array.isArray(a) ? a : [];
      const parts = [...now.filter((x) => !was.includes(x)).map((x) => '+ ' + x), ...was.filter((x) => !now.includes(x)).map((x) => '− ' + x)];
      return name + ': ' + (parts.length ? parts.join(', ') : 'unchanged');
    }
    return name + ': ' + valueText(b) + ' → ' + valueText(a);
  }

  function valueText(v) {
    if (v === undefined) return dash;
    if (v === null || v === '') return 'none';
    const s = typeof v === 'string' ? '"' + v + '"' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return s.length > 120 ? s.slice(0, 119) + '…' : s;
  }

  function selectRoom(name) {
    if (name === state.room) return;
    state.room = name;
    state.dirty.clear();
    history.replaceState(null, '', '#room=' + encodeURIComponent(name));
    say('');
    say('', false, 'gateway-msg');
    render();
    pullHistory(currentRoom()).then(render, failed);
  }

  function main() {
    const grid = $('chart-grid');
    for (const c of charts) grid.append(c.fig);
    wire();
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) {
      // A kept token goes straight to sampling: an outage shows as
      // unreachable and recovers; a refusal asks for a new token.
      state.token = saved;
      showDashboard();
      start();
    } else {
      askToken('');
    }
  }

  main();
})();

// Waiting-room page: sign in, enter the queue, wait, order. Plain DOM, no build step.
// Screens are <section>s toggled with the hidden attribute; text is updated in place.
//
// Gateway mode (the server marks the root element data-gateway="1" and
// data-base="/_wr"): the page and its API live under that base, visitors are
// anonymous (no sign-in, no order form), the room's proof of work is solved
// in a Web Worker before entering, and at READY the visitor goes back to the
// site's URL it came from (?return=).
'use strict';

const CURRENCY = 'USD'; // product prices are integer cents
const TIMEOUT_MS = 15000;

const TEXT = {
  en: {
    title: 'Waiting room', language: 'Language', room: 'Room: {room}',
    signinH: 'Sign in', loginId: 'Login ID', password: 'Password', signinBtn: 'Sign in',
    demoHint: 'Demo: user1 … user10000, password demo-pass',
    enterH: 'Join the queue', enterBtn: 'Enter the queue',
    enterP: 'You will get a place in line. Keep this page open; it updates by itself.',
    queueH: 'You are in line', position: 'You are #{n}', waiting: '{n} people waiting',
    progress: 'Progress to the front', etaLabel: 'Estimated wait', elapsedLabel: 'Time waiting',
    tierLabel: 'Connection', etaSoon: 'less than a minute', etaUnknown: 'not known yet', etaEstimating: 'estimating…', etaAbout: 'about {d}',
    tier_sse: 'live', tier_ws: 'live-ws', tier_poll: 'polling', viaTab: '{tier}, via another tab',
    liveOff: 'Live updates are unavailable here; retrying…',
    leave: 'Leave the queue',
    readyH: "It's your turn", left: '{t} left to order', product: 'Product',
    quantity: 'Quantity (1–10)', orderBtn: 'Order', stock: '{n} left', soldOutShort: 'sold out',
    doneH: 'Order placed', doneP: 'Order {id}: {q} × {name}.',
    endedH: 'Your place has ended', reenterBtn: 'Enter the queue again',
    expired: 'Your place expired: the wait or your turn ended. You can join the queue again.',
    soldOut: 'Sorry, that item sold out before your order went through. You can join the queue again to try another.',
    windowEnded: 'Your turn ended before an order was placed. You can join the queue again.',
    checking: 'Checking your place…', reconnecting: 'Reconnecting…',
    degraded: 'The queue service is briefly unreachable. Your place is kept, and nobody is admitted meanwhile.',
    badCreds: 'Wrong login ID or password.',
    tooMany: 'Too many attempts, try again in {n} s.', tooManySoon: 'Too many attempts, try again shortly.',
    roomNotFound: 'This waiting room does not exist. Please check the link.',
    paused: 'The queue is paused right now. Please try again in a few minutes.',
    busy: 'The shop is busy. Your place is kept — try again.',
    network: 'Cannot reach the server. Check your connection and try again.',
    signinAgain: 'Your sign-in has expired. Please sign in again.',
    noProducts: 'No products are available right now.', productGone: 'That product is no longer available.',
    error: 'Something went wrong ({code}). Please try again.', leftQueue: 'You left the queue.',
    preH: 'The sale has not started yet', opensIn: 'Opens in {t}', opensAt: 'Opening at {time}', opening: 'Opening now…',
    preFifo: 'Your place in line: #{n}', preWaiting: '{n} people are waiting for the opening',
    preRandom: 'Everyone who arrives before the opening gets a fair, random place when it starts. Keep this page open.',
    closedH: 'This sale is closed', closedP: 'Sorry — the sale has closed or sold out. Thank you for your interest.',
    closedKept: 'You keep your place (#{n}) in case it reopens; this page updates by itself.',
    closedKeptPre: 'You keep your place in case it reopens; this page updates by itself.',
    verifyH: 'Checking your browser…', verifyP: 'This takes a moment and keeps the queue fair. You join it right after; keep this page open.',
    verifyFailed: 'Your browser could not be checked. Please try again.',
    noWorker: 'This browser cannot run the check this page needs. Please try another browser.',
    backH: 'Your turn — taking you back…', backLink: 'Continue to the site',
  },
  ko: {
    title: '대기실', language: '언어', room: '대기실: {room}',
    signinH: '로그인', loginId: '아이디', password: '비밀번호', signinBtn: '로그인',
    demoHint: '데모: user1 … user10000, 비밀번호 demo-pass',
    enterH: '대기열 참여', enterBtn: '대기열 입장',
    enterP: '대기 순번을 받습니다. 이 페이지를 열어 두세요. 자동으로 갱신됩니다.',
    queueH: '대기 중입니다', position: '내 순서: {n}번째', waiting: '{n}명 대기 중',
    progress: '입장까지 진행률', etaLabel: '예상 대기 시간', elapsedLabel: '대기한 시간',
    tierLabel: '연결 방식', etaSoon: '1분 미만', etaUnknown: '아직 알 수 없음', etaEstimating: '계산 중…', etaAbout: '약 {d}',
    tier_sse: '실시간', tier_ws: '실시간 (WebSocket)', tier_poll: '주기적 확인', viaTab: '{tier}, 다른 탭에서 받는 중',
    liveOff: '실시간 연결을 쓸 수 없어 다시 시도하는 중…',
    leave: '대기열 나가기',
    readyH: '내 차례입니다', left: '주문 가능 시간 {t} 남음', product: '상품',
    quantity: '수량 (1–10)', orderBtn: '주문하기', stock: '재고 {n}개', soldOutShort: '품절',
    doneH: '주문 완료', doneP: '주문 번호 {id}: {name} {q}개.',
    endedH: '대기가 종료되었습니다', reenterBtn: '다시 대기열 입장',
    expired: '대기 순번이 만료되었습니다. 다시 대기열에 들어갈 수 있습니다.',
    soldOut: '죄송합니다. 주문이 처리되기 전에 상품이 품절되었습니다. 다시 대기열에 들어가 다른 상품을 주문할 수 있습니다.',
    windowEnded: '주문하기 전에 주문 가능 시간이 끝났습니다. 다시 대기열에 들어갈 수 있습니다.',
    checking: '대기 순번을 확인하는 중…', reconnecting: '다시 연결하는 중…',
    degraded: '대기열 서비스에 잠시 연결할 수 없습니다. 순번은 그대로 유지되며, 그동안에는 누구도 입장하지 않습니다.',
    badCreds: '아이디 또는 비밀번호가 올바르지 않습니다.',
    tooMany: '시도가 너무 많습니다. {n}초 후에 다시 시도하세요.', tooManySoon: '시도가 너무 많습니다. 잠시 후 다시 시도하세요.',
    roomNotFound: '존재하지 않는 대기실입니다. 링크를 확인하세요.',
    paused: '지금은 대기열이 일시 중지되었습니다. 몇 분 후에 다시 시도하세요.',
    busy: '주문이 몰려 있습니다. 순서는 유지됩니다. 다시 시도하세요.',
    network: '서버에 연결할 수 없습니다. 연결을 확인하고 다시 시도하세요.',
    signinAgain: '로그인이 만료되었습니다. 다시 로그인하세요.',
    noProducts: '지금 주문할 수 있는 상품이 없습니다.', productGone: '해당 상품을 찾을 수 없습니다.',
    error: '문제가 발생했습니다 ({code}). 다시 시도하세요.', leftQueue: '대기열에서 나왔습니다.',
    preH: '아직 판매가 시작되지 않았습니다', opensIn: '{t} 후 시작', opensAt: '시작 시각: {time}', opening: '곧 시작합니다…',
    preFifo: '내 대기 순서: {n}번째', preWaiting: '{n}명이 시작을 기다리는 중',
    preRandom: '시작 전에 도착한 모든 분은 시작할 때 공정하게 무작위로 순서를 받습니다. 이 페이지를 열어 두세요.',
    closedH: '판매가 종료되었습니다', closedP: '죄송합니다. 판매가 종료되었거나 품절되었습니다. 관심 가져 주셔서 감사합니다.',
    closedKept: '다시 열릴 경우를 위해 순서({n}번째)는 유지됩니다. 이 페이지는 자동으로 갱신됩니다.',
    closedKeptPre: '다시 열릴 경우를 위해 순서는 유지됩니다. 이 페이지는 자동으로 갱신됩니다.',
    verifyH: '브라우저를 확인하는 중…', verifyP: '대기열을 공정하게 유지하기 위한 확인이며 잠시면 끝납니다. 확인 후 바로 대기열에 들어가니 이 페이지를 열어 두세요.',
    verifyFailed: '브라우저를 확인하지 못했습니다. 다시 시도하세요.',
    noWorker: '이 브라우저에서는 이 페이지에 필요한 확인을 실행할 수 없습니다. 다른 브라우저를 사용해 주세요.',
    backH: '내 차례입니다 — 사이트로 돌아가는 중…', backLink: '사이트로 이동',
  },
};

const $ = (id) => document.getElementById(id);
const SCREENS = ['login', 'enter', 'verify', 'prequeue', 'queue', 'closed', 'ready', 'back', 'order-result', 'ended'];
// Statuses of a user who holds a place and follows it live.
const HOLDING = ['PREQUEUE', 'WAITING', 'CLOSED'];

// Storage never throws (it can be disabled); tokens live in sessionStorage only.
function stored(area, key, value) {
  try {
    if (value === undefined) return window[area].getItem(key);
    if (value === null) window[area].removeItem(key);
    else window[area].setItem(key, value);
  } catch { /* storage unavailable: keep the value in memory only */ }
  return null;
}

// BASE prefixes every URL of the waiting room's own ('' outside gateway mode).
const BASE = document.documentElement.dataset.base || '';
const GATEWAY = document.documentElement.dataset.gateway === '1';
// A refused proof of work gets a new challenge at most this many times.
const CHALLENGE_RETRIES = 3;
const CHALLENGE_ERRORS = ['challenge_required', 'challenge_invalid'];

const room = roomFromURL();
const PLACE_KEY = 'wr.place.' + room;
// Transport tiers, best first. ?transport=sse|ws|poll forces one (tests, hostile proxies).
const TIERS = ['sse', 'ws', 'poll'];
const FORCED = TIERS.includes(new URLSearchParams(location.search).get('transport'))
  ? new URLSearchParams(location.search).get('transport') : '';
const FIRST_EVENT_MS = 10000; // a stream that says nothing this long is blocked (e.g. a buffering proxy)
let lang = stored('localStorage', 'wr.lang') || ((navigator.language || '').toLowerCase().startsWith('ko') ? 'ko' : 'en');
let tier = FORCED || TIERS[0];
// place: {token, start (position at entry), at (ms when entered)} for this room.
let place = parse(stored('sessionStorage', PLACE_KEY)) || {};
// One tab per room holds the live stream (the leader, by a Web Lock); the
// others follow it over a BroadcastChannel. Without either, every tab leads.
const chan = typeof BroadcastChannel === 'function' ? new BroadcastChannel('wr.' + room) : null;
const LOCK = 'wr.lead.' + room;
const S = {
  access: stored('sessionStorage', 'wr.access'), accessExp: Number(stored('sessionStorage', 'wr.accessExp')) || 0,
  screen: '', msg: null, last: null, stop: null, role: '', skew: 0, announced: 0,
  entry: null, entryEnd: NaN, products: [], ordering: false, endedKey: '', order: null, opensEnd: NaN,
  // Gateway mode: a join under way; the entry token the entry cookie holds
  // (set by a READY answer of enter or GET position); on the way back.
  joining: false, cookieEntry: null, leaving: false,
};

function parse(json) {
  try { return JSON.parse(json); } catch { return null; }
}

function roomFromURL() {
  const own = BASE && location.pathname.startsWith(BASE + '/');
  const m = (own ? location.pathname.slice(BASE.length) : location.pathname).match(/^\/rooms\/([^/]+)/);
  let r = m ? m[1] : new URLSearchParams(location.search).get('room');
  try { r = m ? decodeURIComponent(r) : r; } catch { /* keep it as written */ }
  return r || 'default';
}

const roomPath = (what) => '/rooms/' + encodeURIComponent(room) + '/' + what;
const savePlace = () => stored('sessionStorage', PLACE_KEY, JSON.stringify(place));
const clearPlace = () => { place = {}; S.entry = null; stored('sessionStorage', PLACE_KEY, null); };
const hasAccess = () => Boolean(S.access) && Date.now() < S.accessExp - 5000;
// startScreen is where a user without a place begins: visitors are anonymous in gateway mode.
const startScreen = () => (GATEWAY || hasAccess() ? 'enter' : 'login');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const jitter = (ms, f = 0.2) => ms * (1 - f + 2 * f * Math.random());
// backoff is the delay before reconnect attempt n (0, 1, …): exponential, capped, jittered.
const backoff = (n) => jitter(Math.min(30000, 1000 * 2 ** n), 0.5);

// --- text -------------------------------------------------------------------

const fmtN = (n) => new Intl.NumberFormat(lang).format(n);
const money = (cents) => new Intl.NumberFormat(lang, { style: 'currency', currency: CURRENCY }).format(cents / 100);

// t looks up a string and fills {params}; numbers are formatted for the language.
function t(key, params = {}) {
  return (TEXT[lang][key] || key).replace(/\{(\w+)\}/g, (_, p) =>
    typeof params[p] === 'number' ? fmtN(params[p]) : String(params[p]));
}

function setText(el, s) {
  if (el.textContent !== s) el.textContent = s;
}

function clock(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const pad = (n) => String(n).padStart(2, '0');
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return (h ? h + ':' + pad(m) : m) + ':' + pad(s % 60);
}

// eta words a QueueStatus's wait: "estimating…" until the room has measured
// its admission rate (etaKnown false), "not known" when the room admits nobody.
function eta(qs) {
  if (qs.etaKnown === false) return t('etaEstimating');
  const sec = qs.etaSeconds;
  if (typeof sec !== 'number') return t('etaUnknown');
  if (sec < 60) return t('etaSoon');
  const min = Math.round(sec / 60);
  const [n, unit] = min < 90 ? [min, 'minute'] : [Math.round(min / 60), 'hour'];
  return t('etaAbout', { d: new Intl.NumberFormat(lang, { style: 'unit', unit, unitDisplay: 'long' }).format(n) });
}

// say shows a message in the polite live region; say(null) clears it.
function say(key, params, error = false) {
  S.msg = key && { key, params, error };
  setText($('message'), key ? t(key, params) : '');
  $('message').classList.toggle('error', error);
}

// announce feeds the screen-reader region; routine updates at most every 30 s.
function announce(text, force) {
  if (!force && Date.now() - S.announced < 30000) return;
  S.announced = Date.now();
  setText($('announce'), text);
}

function tooMany(res) {
  if (res.wait === null) say('tooManySoon', {}, true);
  else say('tooMany', { n: Math.ceil(res.wait / 1000) }, true);
}

const sayError = (res) => say('error', { code: res.data.error || res.status }, true);

function setLang(l) {
  lang = TEXT[l] ? l : 'en';
  stored('localStorage', 'wr.lang', lang);
  document.documentElement.lang = lang;
  document.querySelectorAll('[data-i18n]').forEach((el) => setText(el, t(el.dataset.i18n)));
  document.querySelectorAll('.lang').forEach((b) => b.setAttribute('aria-pressed', String(b.dataset.lang === lang)));
  document.querySelector('nav').setAttribute('aria-label', t('language'));
  setText($('room'), t('room', { room }));
  document.title = t('title');
  if (S.msg) say(S.msg.key, S.msg.params, S.msg.error);
  if (['queue', 'prequeue', 'closed'].includes(S.screen)) render(S.last);
  if (S.screen === 'ready') { fillProducts(); tick(); }
  setText($('ended-text'), S.endedKey ? t(S.endedKey) : '');
  if (S.order) setText($('done-text'), doneText(S.order));
}

// --- screens ----------------------------------------------------------------

// show switches screens. Focus moves to the new heading only when the focused
// element was just hidden, so status changes never pull focus away from the user.
function show(name) {
  if (S.screen === name) return;
  S.screen = name;
  for (const id of SCREENS) $(id).hidden = id !== name;
  $('leave').hidden = !['queue', 'ready', 'prequeue'].includes(name) && !(name === 'closed' && place.token);
  say(null);
  const had = document.activeElement;
  if (had && had.closest('[hidden]')) $(name).querySelector('h2').focus();
}

// render is the one sink for QueueStatus objects, whichever transport sent them.
function render(qs) {
  if (!qs) return;
  S.last = qs;
  if (qs.queueToken && place.token) { // a ticket given at the opening
    place.token = qs.queueToken;
    savePlace();
  }
  if (qs.status === 'READY') return ready(qs);
  if (qs.status === 'PREQUEUE') return prequeue(qs);
  if (qs.status === 'CLOSED') return closed(qs);
  if (qs.status !== 'WAITING') return;
  place.start = Math.max(place.start || 0, qs.position);
  place.at = place.at || Date.now();
  savePlace();
  const first = S.screen !== 'queue';
  show('queue');
  setText($('position'), t('position', { n: qs.position }));
  setText($('waiting'), t('waiting', { n: qs.waiting }));
  setText($('eta'), eta(qs));
  showTier();
  // From the position at entry (0) to the front (1).
  $('progress').value = place.start > 1 ? (place.start - qs.position) / (place.start - 1) : 1;
  document.title = `#${fmtN(qs.position)} · ${t('title')}`;
  tick();
  announce(`${t('position', { n: qs.position })}. ${t('etaLabel')}: ${eta(qs)}.`, first);
}

// prequeue shows the countdown to a scheduled opening. The time left comes
// from the server (opensInMs), so a wrong client clock does not matter.
function prequeue(qs) {
  place.at = place.at || Date.now();
  savePlace();
  const first = S.screen !== 'prequeue';
  if (typeof qs.opensInMs === 'number') S.opensEnd = Date.now() + qs.opensInMs;
  show('prequeue');
  setText($('opens-at'), qs.opensAt
    ? t('opensAt', { time: new Date(qs.opensAt).toLocaleString(lang, { dateStyle: 'medium', timeStyle: 'short' }) }) : '');
  setText($('pre-place'), qs.position ? t('preFifo', { n: qs.position }) : t('preRandom'));
  setText($('pre-waiting'), qs.waiting ? t('preWaiting', { n: qs.waiting }) : '');
  document.title = t('preH');
  tick();
  announce(`${t('preH')}. ${$('opens-in').textContent}`, first);
}

// closed is the friendly screen of a room that refuses entries; a user who
// holds a place keeps it and keeps following, in case the room reopens.
function closed(qs) {
  const first = S.screen !== 'closed';
  show('closed');
  $('closed-kept').hidden = !qs;
  if (qs) setText($('closed-kept'), qs.position ? t('closedKept', { n: qs.position }) : t('closedKeptPre'));
  document.title = t('closedH');
  announce(`${t('closedH')}. ${t('closedP')}`, first);
}

// showTier names the connection in use; a following tab names its leader's.
function showTier() {
  const el = $('tier'), name = t('tier_' + tier);
  el.dataset.tier = tier;
  el.dataset.role = S.role;
  setText(el, S.role === 'follower' ? t('viaTab', { tier: name }) : name);
}

function ready(qs) {
  if (GATEWAY) return back(qs);
  stopFollow();
  S.entry = qs.entryToken;
  S.entryEnd = Date.parse(qs.entryExpiresAt);
  $('progress').value = 1;
  show('ready');
  document.title = t('readyH');
  tick();
  if (S.screen !== 'ready') return; // the window had already ended
  announce(`${t('readyH')}. ${$('countdown').textContent}`, true);
  loadProducts();
}

function end(key) {
  stopFollow();
  clearPlace();
  S.endedKey = key;
  setText($('ended-text'), t(key));
  show('ended');
  document.title = t('title');
  announce(t(key), true);
}

function needLogin(key) {
  S.access = null;
  stored('sessionStorage', 'wr.access', null);
  show('login');
  if (key) say(key, {}, true);
}

// tick runs every second: time spent waiting, and the countdown while READY.
function tick() {
  if (S.screen === 'queue' && place.at) setText($('elapsed'), clock(Date.now() - place.at));
  if (S.screen === 'prequeue') {
    const left = S.opensEnd - Date.now();
    setText($('opens-in'), !Number.isFinite(left) ? '' : left > 0 ? t('opensIn', { t: clock(left) }) : t('opening'));
  }
  if (S.screen !== 'ready') return;
  const left = S.entryEnd - (Date.now() + S.skew);
  if (left <= 0 && !S.ordering) return end('windowEnded');
  setText($('countdown'), Number.isFinite(left) ? t('left', { t: clock(left) }) : '');
  $('countdown').classList.toggle('urgent', left < 30000);
}

// --- API --------------------------------------------------------------------

// api calls the same-origin JSON API. It resolves with {status, ok, data, wait}
// (wait = Retry-After in ms or null) and rejects only on network failure.
async function api(method, path, { token, body, headers = {} } = {}) {
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body) headers['Content-Type'] = 'application/json';
  const res = await fetch(BASE + '/api/v1' + path, {
    method, headers, body: body && JSON.stringify(body), credentials: 'same-origin', cache: 'no-store',
    signal: AbortSignal.timeout ? AbortSignal.timeout(TIMEOUT_MS) : undefined,
  });
  const date = Date.parse(res.headers.get('Date'));
  if (date) S.skew = Math.abs(date - Date.now()) > 2000 ? date - Date.now() : 0; // ignore sub-second noise
  const data = res.status === 204 ? {} : await res.json().catch(() => ({}));
  // A READY answer (enter, GET position) also set the entry cookie in gateway mode.
  if (res.ok && data && data.status === 'READY' && data.entryToken) S.cookieEntry = data.entryToken;
  return { status: res.status, ok: res.ok, data: data || {}, wait: retryAfter(res.headers.get('Retry-After')) };
}

function retryAfter(h) {
  if (!h) return null;
  const ms = /^\d+$/.test(h.trim()) ? Number(h) * 1000 : Date.parse(h) - Date.now();
  return ms >= 0 ? ms : null;
}

// --- transports -------------------------------------------------------------

// A transport delivers QueueStatus objects to h.status, calls h.gone() when the
// server holds no place for us, h.link(ok) when the connection drops or
// recovers, h.degraded(d) when the server says it lost (d) or regained its
// queue store, h.fail(status) when its tier does not work here (it returns
// true if the caller moved on to the next tier), and h.replaced() when the
// server ended the stream for a newer one of the same user (another tab,
// browser or device). It returns a stop function.

// probe asks GET position why a stream ended: {gone}, {status} or {} (down).
async function probe() {
  const res = await api('GET', roomPath('position'), { token: place.token }).catch(() => null);
  if (res && [401, 403, 404].includes(res.status)) return { gone: true };
  return res && res.ok ? { status: res.data } : {};
}

// pushTier makes a push transport from open(on), which connects and returns a
// close function, and calls on.status(qs), on.gone(), on.restart() (the server
// is going away: come back soon), on.replaced() (a newer stream of ours took
// over: do not come back) and on.broken() (dropped or refused). A
// refusal (non-200, proxy error) closes an EventSource for good and a refused
// WebSocket says no more than 1006, so after every failure GET position tells
// whether the place is gone, the server is down, or only this tier is blocked.
function pushTier(open) {
  return (h) => {
    let close = null, timer = 0, watchdog = 0, fails = 0, stopped = false, got = false;
    const shut = () => { clearTimeout(watchdog); if (close) close(); close = null; };
    const later = (ms) => { clearTimeout(timer); if (!stopped) timer = setTimeout(connect, ms); };
    const on = {
      status(qs) {
        if (stopped || !qs) return;
        got = true;
        fails = 0;
        clearTimeout(watchdog);
        h.link(true);
        h.status(qs);
      },
      gone() { if (!stopped) { shut(); h.gone(); } },
      degraded(m) { if (!stopped && m) h.degraded(!!m.degraded); },
      restart() { if (!stopped) { shut(); later(jitter(2000, 0.5)); } },
      replaced() { if (!stopped) { shut(); h.replaced(); } },
      async broken() {
        if (stopped || !close) return;
        const delivered = got;
        shut();
        const p = await probe();
        if (stopped) return;
        if (p.gone) return h.gone();
        if (!p.status) h.link(false);
        else {
          h.link(true);
          h.status(p.status);
          if (stopped) return; // the status ended the wait (READY)
          // Refused before saying anything while the API answers: this
          // tier is blocked on the way (or switched off), not the server.
          if (!delivered) {
            if (h.fail(p.status)) return;
            say('liveOff');
          }
        }
        later(backoff(fails++));
      },
    };
    function connect() {
      if (stopped) return;
      got = false;
      watchdog = setTimeout(on.broken, FIRST_EVENT_MS);
      close = open(on);
    }
    connect();
    return () => { stopped = true; clearTimeout(timer); shut(); };
  };
}

const TRANSPORTS = {
  // sse: EventSource on the same origin; the HttpOnly wr_queue cookie carries
  // the queue token, so no token is ever put in the URL.
  sse: pushTier((on) => {
    const es = new EventSource(BASE + '/api/v1' + roomPath('events'));
    es.addEventListener('status', (e) => on.status(parse(e.data)));
    es.addEventListener('gone', on.gone);
    es.addEventListener('degraded', (e) => on.degraded(parse(e.data)));
    // reconnect: the server restarts (come back), or a newer stream of this
    // user replaced this one ({"reason":"replaced"}: do not).
    es.addEventListener('reconnect', (e) => {
      const m = parse(e.data);
      if (m && m.reason === 'replaced') on.replaced();
      else on.restart();
    });
    // Our own reconnect (with backoff) replaces the browser's.
    es.onerror = on.broken;
    return () => es.close();
  }),

  // ws: frames {"type":"status",…} / {"type":"gone",…}; close 1001 = the server
  // restarts; {"type":"reconnect","reason":"replaced"} then close 4409 = a
  // newer stream of this user took over.
  ws: pushTier((on) => {
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + BASE + '/api/v1' + roomPath('ws'));
    let done = false;
    ws.onmessage = (e) => {
      const m = parse(e.data);
      if (m && m.type === 'status') on.status(m);
      else if (m && m.type === 'gone') { done = true; on.gone(); }
      else if (m && m.type === 'degraded') on.degraded(m);
      else if (m && m.type === 'reconnect' && m.reason === 'replaced') { done = true; on.replaced(); }
    };
    ws.onclose = (e) => {
      if (done) return;
      if (e.code === 1001) on.restart();
      else if (e.code === 4409) on.replaced();
      else on.broken();
    };
    return () => { done = true; ws.close(); };
  }),

  // poll: GET position, next one after the server's pollAfterMs.
  poll(h, last) {
    let timer = 0, fails = 0, busy = false, stopped = false;
    const later = (ms) => { clearTimeout(timer); if (!stopped) timer = setTimeout(poll, ms); };
    async function poll() {
      if (busy) return;
      busy = true;
      let res = null;
      try { res = await api('GET', roomPath('position'), { token: place.token }); } catch { /* network */ }
      busy = false;
      if (stopped) return;
      if (res && res.ok) {
        fails = 0;
        h.link(true);
        h.status(res.data);
        return later(jitter(res.data.pollAfterMs || 1000, 0.1));
      }
      if (res && [401, 403, 404].includes(res.status)) return h.gone();
      if (!res || res.status >= 500) h.link(false);
      later(res && res.wait !== null ? res.wait + Math.random() * 1000 : backoff(fails++));
    }
    const kick = () => { if (document.visibilityState === 'visible') later(0); };
    document.addEventListener('visibilitychange', kick);
    window.addEventListener('online', kick);
    later(last ? jitter(last.pollAfterMs || 1000, 0.1) : 0);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', kick);
      window.removeEventListener('online', kick);
    };
  },
};

// lead runs the tiers for this tab and the tabs that follow it: the forced
// one, or SSE, then WebSocket, then polling, each moving on only when the one
// before it is refused.
function lead(signal, last) {
  let i = FORCED ? TIERS.indexOf(FORCED) : 0, stop = () => {};
  const run = (st) => {
    tier = TIERS[i];
    showTier();
    stop = TRANSPORTS[tier]({
      status(qs) {
        share({ t: 'status', qs, tier, start: Math.max(place.start || 0, qs.position || 0), at: place.at });
        render(qs);
      },
      gone() { share({ t: 'gone' }); end('expired'); },
      degraded(d) { share({ t: 'degraded', d }); degraded(d); },
      link,
      // Another tab, browser or device opened a newer stream for this place
      // and the server keeps the newest. Reopening one here would take it
      // back, and the two would take turns; so this tab polls at its band's
      // pace from now on. The place is kept: nothing to tell the user.
      replaced() {
        stop();
        i = TIERS.indexOf('poll');
        link(true);
        run(S.last);
      },
      fail(qs) {
        if (FORCED || i >= TIERS.length - 1) return false;
        stop();
        i++;
        run(qs);
        return true;
      },
    }, st);
  };
  run(last);
  signal.addEventListener('abort', () => stop());
}

// degraded shows (or clears) that the server cannot reach its queue store:
// the stream stays, nothing moves, the place is kept.
function degraded(d) {
  if (d) say('degraded');
  else if (S.msg && S.msg.key === 'degraded') say(null);
}

function link(ok) {
  if (!ok) say('reconnecting');
  else if (S.msg && (S.msg.key === 'reconnecting' || S.msg.key === 'liveOff')) say(null);
}

// follow keeps this tab's status current until READY or the end: as the
// room's leader tab when it gets the lock, else from the leader's messages.
function follow(last) {
  stopFollow();
  const ctl = new AbortController();
  S.stop = () => ctl.abort();
  if (!chan || !navigator.locks) {
    S.role = 'leader';
    return lead(ctl.signal, last);
  }
  S.role = 'follower';
  share({ t: 'hello' });
  navigator.locks.request(LOCK, { signal: ctl.signal }, () => new Promise((release) => {
    ctl.signal.addEventListener('abort', release);
    if (ctl.signal.aborted) return release();
    S.role = 'leader';
    lead(ctl.signal, S.last || last);
  })).catch(() => { /* aborted while waiting for the lock */ });
}

function stopFollow() {
  if (S.stop) S.stop();
  S.stop = null;
  S.role = '';
}

function share(m) {
  if (chan) chan.postMessage(m);
}

// shared handles the messages of the room's other tabs.
function shared(ev) {
  const m = ev.data || {};
  switch (m.t) {
    case 'hello': // a new tab: tell it where we are
      if (S.role === 'leader' && S.last) share({ t: 'status', qs: S.last, tier, start: place.start, at: place.at });
      return;
    case 'status':
      if (S.role !== 'follower' || !m.qs) return;
      tier = TIERS.includes(m.tier) ? m.tier : tier;
      if (m.start > (place.start || 0)) place.start = m.start;
      if (m.at && (!place.at || m.at < place.at)) place.at = m.at;
      return render(m.qs);
    case 'gone':
      if (S.role === 'follower') end('expired');
      return;
    case 'degraded':
      if (S.role === 'follower') degraded(!!m.d);
      return;
    case 'ordered': // another tab used the entry token
      if (['queue', 'ready'].includes(S.screen) && m.order) ordered(m.order);
      return;
    case 'left':
      if (['queue', 'ready', 'prequeue', 'closed'].includes(S.screen)) leftQueue();
  }
}

// --- actions ----------------------------------------------------------------

// busyWhile disables a button while an action runs.
async function busyWhile(btn, fn) {
  btn.disabled = true;
  try { return await fn(); } finally { btn.disabled = false; }
}

async function login(ev) {
  ev.preventDefault();
  const body = { loginId: $('login-id').value.trim(), password: $('password').value };
  const res = await busyWhile(ev.submitter || ev.target.querySelector('button'), () =>
    api('POST', '/auth/login', { body }).catch(() => null));
  if (!res) return say('network', {}, true);
  if (res.ok) {
    S.access = res.data.accessToken;
    S.accessExp = Date.now() + (res.data.expiresIn || 900) * 1000;
    stored('sessionStorage', 'wr.access', S.access);
    stored('sessionStorage', 'wr.accessExp', String(S.accessExp));
    $('password').value = '';
    return show('enter');
  }
  if (res.status === 401) say('badCreds', {}, true);
  else if (res.status === 429) tooMany(res);
  else sayError(res);
}

async function enter(ev) {
  if (!hasAccess()) return needLogin('signinAgain');
  const res = await busyWhile(ev.currentTarget, () =>
    api('POST', roomPath('enter'), { token: S.access }).catch(() => null));
  if (!res) return say('network', {}, true);
  if (res.ok) return entered(res.data);
  if (res.status === 401) needLogin('signinAgain');
  else if (res.status === 404) say('roomNotFound', {}, true);
  else if (res.status === 423 && res.data.error === 'room_closed') { S.last = null; closed(null); }
  else if (res.status === 423) say('paused', {}, true);
  else if (res.status === 429) tooMany(res);
  else sayError(res);
}

async function leave(ev) {
  const res = await busyWhile(ev.currentTarget, () =>
    api('POST', roomPath('leave'), { token: place.token }).catch(() => null));
  if (!res) return say('network', {}, true);
  if (res.ok || [401, 403, 404].includes(res.status)) {
    share({ t: 'left' });
    return leftQueue();
  }
  if (res.status === 429) tooMany(res);
  else sayError(res);
}

// entered keeps the place an enter answered and follows it.
function entered(qs) {
  place.token = qs.queueToken || place.token;
  place.at = place.at || Date.now();
  savePlace();
  track(qs);
}

// track shows a status and keeps following it while the place is held.
function track(qs) {
  render(qs);
  if (HOLDING.includes(qs.status)) follow(qs);
}

function leftQueue() {
  stopFollow();
  clearPlace();
  show(startScreen());
  document.title = t('title');
  say('leftQueue');
}

async function loadProducts() {
  S.products = [];
  fillProducts();
  const got = await Promise.all([1, 2, 3].map((id) => api('GET', '/products/' + id).catch(() => null)));
  S.products = got.filter((r) => r && r.ok).map((r) => r.data);
  if (S.screen !== 'ready') return;
  fillProducts();
  if (!S.products.length) say('noProducts', {}, true);
}

function fillProducts() {
  const sel = $('product'), keep = sel.value;
  sel.replaceChildren(...S.products.map((p) => {
    const o = new Option(`${p.name} — ${money(p.price)} — ${p.stock > 0 ? t('stock', { n: p.stock }) : t('soldOutShort')}`, p.id);
    o.disabled = p.stock <= 0;
    return o;
  }));
  if (keep) sel.value = keep;
  const chosen = sel.selectedOptions[0];
  if (!chosen || chosen.disabled) sel.value = String((S.products.find((p) => p.stock > 0) || {}).id);
  $('order-btn').disabled = !S.products.some((p) => p.stock > 0);
  limitQuantity();
}

// limitQuantity keeps the quantity within 1–10 and the chosen product's stock.
function limitQuantity() {
  const p = S.products.find((x) => String(x.id) === $('product').value);
  $('quantity').max = String(Math.max(1, Math.min(10, p ? p.stock : 10)));
}

const productName = (id) => (S.products.find((p) => p.id === id) || { name: '#' + id }).name;
const doneText = (o) => t('doneP', { id: String(o.orderId), q: o.quantity, name: productName(o.productId) });

async function order(ev) {
  ev.preventDefault();
  const body = { productId: Number($('product').value), quantity: Number($('quantity').value) };
  S.ordering = true;
  const res = await busyWhile($('order-btn'), () => api('POST', '/orders', {
    token: place.token, body, headers: { 'X-Entry-Token': S.entry || '' },
  }).catch(() => null));
  S.ordering = false;
  if (!res) return say('network', {}, true);
  if (res.status === 201) {
    share({ t: 'ordered', order: res.data });
    return ordered(res.data);
  }
  if (res.status === 409) end('soldOut');
  else if (res.status === 403) end('windowEnded');
  else if (res.status === 401) end('expired');
  else if (res.status === 503) say('busy', {}, true);
  else if (res.status === 404) say('productGone', {}, true);
  else if (res.status === 429) tooMany(res);
  else sayError(res);
}

function ordered(o) {
  stopFollow();
  S.order = o;
  clearPlace();
  setText($('done-text'), doneText(o));
  show('order-result');
  document.title = t('doneH');
  announce(`${t('doneH')}. ${doneText(o)}`, true);
}

// --- gateway mode -------------------------------------------------------------

// enterClick enters the queue: with the access token, or anonymously in gateway mode.
function enterClick(ev) {
  if (GATEWAY) return busyWhile(ev.currentTarget, join);
  return enter(ev);
}

// arrive starts a visit in gateway mode. A visitor who already holds a place
// (a reload, a second tab: the HttpOnly queue cookie goes with GET position)
// resumes it without entering again; anyone else joins the queue.
async function arrive() {
  say('checking');
  for (let n = 0; ; n++) {
    const res = await api('GET', roomPath('position'), { token: place.token }).catch(() => null);
    if (res && res.ok) return track(res.data);
    if (res && res.status < 500 && res.status !== 429) { // no place here (401, 403, 404)
      clearPlace();
      return join();
    }
    if (res && res.status === 429) tooMany(res);
    else say('network', {}, true);
    await sleep(res && res.wait !== null ? res.wait : backoff(n));
  }
}

// join enters the queue as an anonymous visitor, with the room's proof of
// work when it asks for one. A refused solution (challenge_required,
// challenge_invalid) gets a new challenge, at most CHALLENGE_RETRIES times.
async function join() {
  if (S.joining) return;
  S.joining = true;
  try {
    let proof = null, refused = 0;
    for (let n = 0; ; n++) {
      proof = proof || await prove();
      if (!proof) return; // prove said why
      const res = await api('POST', roomPath('enter'), { body: proof.challenge ? proof : undefined }).catch(() => null);
      if (res && res.ok) return entered(res.data);
      if (res && res.status === 403 && CHALLENGE_ERRORS.includes(res.data.error)) {
        proof = null;
        if (++refused > CHALLENGE_RETRIES) return giveUp('verifyFailed');
        continue;
      }
      const wait = refusal(res, n);
      if (wait < 0) return;
      await sleep(wait);
    }
  } finally {
    S.joining = false;
  }
}

// prove gets the room's challenge and solves it: {} when the room asks for
// none, {challenge, solution}, or null when it cannot (the page says why).
// A challenge that expires before it is solved is replaced by a new one.
async function prove() {
  for (let n = 0, failed = 0; ;) {
    const res = await api('GET', roomPath('challenge')).catch(() => null);
    if (res && res.ok && !res.data.required) return {};
    if (res && res.ok) {
      verifying(0);
      const got = await solve(res.data);
      if (got.solution) return { challenge: res.data.challenge, solution: got.solution };
      if (got.unsupported) return giveUp('noWorker');
      if (got.failed && ++failed > CHALLENGE_RETRIES) return giveUp('verifyFailed');
      continue;
    }
    const wait = refusal(res, n++);
    if (wait < 0) return null;
    await sleep(wait);
  }
}

// solve runs a challenge in a Web Worker, so the page stays responsive, and
// resolves with {solution}, {expired} (the challenge ran out first),
// {failed} or {unsupported} (no workers here).
function solve(ch) {
  return new Promise((resolve) => {
    let worker = null, timer = 0;
    try {
      worker = new Worker(BASE + '/static/pow-worker.js');
    } catch {
      return resolve({ unsupported: true });
    }
    const done = (result) => {
      clearTimeout(timer);
      worker.terminate();
      resolve(result);
    };
    // By the server's clock; a second early, so the solution still arrives in time.
    const left = Date.parse(ch.expiresAt) - (Date.now() + S.skew) - 1000;
    timer = setTimeout(() => done({ expired: true }), Number.isFinite(left) ? Math.max(left, 0) : 60000);
    worker.onmessage = (e) => {
      const m = e.data || {};
      if (typeof m.solution === 'string') {
        verifying(1);
        done({ solution: m.solution });
      } else if (m.error) done({ failed: true });
      else if (m.expected > 0) verifying(Math.min(0.95, m.progress / m.expected));
    };
    worker.onerror = () => done({ failed: true });
    worker.postMessage({ token: ch.challenge, difficulty: ch.difficulty });
  });
}

// verifying shows the proof of work's progress (0 to 1); the hashes a
// solution takes vary, so the bar stops at 95 % until one is found.
function verifying(frac) {
  const first = S.screen !== 'verify';
  show('verify');
  const pct = Math.round(frac * 100);
  $('verify-bar').setAttribute('aria-valuenow', String(pct));
  $('verify-progress').value = pct;
  if (!first) return;
  document.title = t('verifyH');
  announce(t('verifyH'), true);
}

// refusal says why a challenge or an enter was refused, and returns how
// long to wait before trying again, or -1 to stop (the user can retry).
function refusal(res, n) {
  if (!res || res.status >= 500) {
    if (res) sayError(res);
    else say('network', {}, true);
    return res && res.wait !== null ? res.wait : backoff(n);
  }
  if (res.status === 429) {
    tooMany(res);
    return res.wait !== null ? res.wait : backoff(n);
  }
  if (res.status === 423 && res.data.error === 'room_closed') {
    S.last = null;
    closed(null);
    return -1;
  }
  show('enter');
  if (res.status === 404) say('roomNotFound', {}, true);
  else if (res.status === 423) say('paused', {}, true);
  else sayError(res);
  return -1;
}

function giveUp(key) {
  show('enter');
  say(key, {}, true);
  return null;
}

// backTo is where an admitted visitor goes: ?return= when it is a path on
// this site outside the waiting room's own (/_wr/), else "/".
function backTo() {
  const r = new URLSearchParams(location.search).get('return') || '';
  if (!r.startsWith('/') || r.startsWith('//') || r.startsWith('/\\')) return '/';
  let u;
  try {
    u = new URL(r, location.origin);
  } catch {
    return '/';
  }
  if (u.origin !== location.origin || /^\/_wr(\/|$)/.test(u.pathname) || (BASE && u.pathname.startsWith(BASE + '/'))) return '/';
  return u.pathname + u.search + u.hash;
}

// back takes an admitted visitor back to the site once the entry cookie is
// set: enter and GET position set it when they answer READY; a READY that
// came over a stream (or from another tab) needs one GET position first.
async function back(qs) {
  if (S.leaving) return; // already on the way
  S.leaving = true;
  stopFollow();
  const to = backTo();
  $('back-link').href = to;
  show('back');
  document.title = t('backH');
  setText($('alert'), t('backH'));
  for (let n = 0; !qs.entryToken || S.cookieEntry !== qs.entryToken; n++) {
    const res = await api('GET', roomPath('position'), { token: place.token }).catch(() => null);
    if (res && res.ok && res.data.status === 'READY') break;
    if (res && (res.ok || (res.status < 500 && res.status !== 429))) {
      S.leaving = false;
      return res.ok ? track(res.data) : end('expired');
    }
    await sleep(res && res.wait !== null ? res.wait : backoff(n));
  }
  clearPlace();
  location.replace(to);
}

// resume continues a stored place, or asks the server (via the wr_queue cookie)
// whether this browser already holds one.
async function resume() {
  if (place.token) {
    say('checking');
    return follow(null);
  }
  show(startScreen());
  const res = await api('GET', roomPath('position')).catch(() => null);
  if (res && res.ok && (S.screen === 'enter' || S.screen === 'login')) track(res.data);
}

function init() {
  $('login-form').addEventListener('submit', login);
  $('enter-btn').addEventListener('click', enterClick);
  $('reenter-btn').addEventListener('click', enterClick);
  $('leave-btn').addEventListener('click', leave);
  $('order-form').addEventListener('submit', order);
  $('product').addEventListener('change', limitQuantity);
  document.querySelectorAll('.lang').forEach((b) => b.addEventListener('click', () => setLang(b.dataset.lang)));
  if (chan) chan.onmessage = shared;
  setLang(lang);
  setInterval(tick, 1000);
  if (GATEWAY) arrive();
  else resume();
}

init();

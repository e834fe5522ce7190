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
    queueH: 'You are in line', position: 'You are #{n}',
    ahead: { zero: 'Nobody ahead of you — you are next', one: '1 person ahead of you', other: '{n} people ahead of you' },
    behind: { zero: 'Nobody behind you yet', one: '1 person behind you', other: '{n} people behind you' },
    progress: 'Progress to the front', etaLabel: 'Estimated wait', elapsedLabel: 'Time waiting',
    updatedLabel: 'Last updated', refLabel: 'Your reference', refHint: 'Quote it if you contact us.',
    keepOpen: 'Keep this page open — it updates by itself. If it is closed, or your phone sleeps for long, your place may be released.',
    tierLabel: 'Connection', etaSoon: 'less than a minute', etaUnknown: 'not known yet', etaEstimating: 'estimating…',
    etaAbout: 'about {d} — around {time}', etaPaused: 'on hold while the sale is paused',
    etaProvisional: 'about {d}, estimating', etaSoonProvisional: 'less than a minute, estimating',
    tier_sse: 'Live updates', tier_ws: 'Live updates', tier_poll: 'Updating every few seconds', viaTab: '{tier}, through your other tab',
    liveOff: 'Live updates are unavailable here; retrying…',
    pausedNote: 'The sale is paused — your place is kept.',
    pausedRoom: 'The sale is paused right now. You can still join the queue: your place is kept, and the line moves again when the sale resumes.',
    resumed: 'The sale has resumed.', noticeLabel: 'A message from the shop',
    placeKept: 'Welcome back — your place was kept. Keep this page open: if it is closed or asleep for long, your place is released.',
    leave: 'Leave the queue', leaveQ: 'Leave the queue? You will lose your place.', leaveYes: 'Yes, leave', leaveNo: 'Stay in line',
    readyH: "It's your turn", left: '{t} left to order', product: 'Product', last30: '30 seconds left to place your order.',
    quantity: 'Quantity (1–10)', orderBtn: 'Order', stock: '{n} left', soldOutShort: 'sold out',
    doneH: 'Order placed', doneIntro: 'Thank you — your order is confirmed.',
    orderNo: 'Order number', qtyLabel: 'Quantity', totalLabel: 'Total', placedLabel: 'Placed',
    doneNext: 'Next: keep your order number — you need it if you contact us. You can close this page now.',
    endedH: 'Your place has ended', reenterBtn: 'Enter the queue again',
    expired: 'Your place expired: the wait or your turn ended. You can join the queue again.',
    idle: 'You were away longer than {d}, so your place was released. You can join the queue again.',
    soldOut: 'Sorry, that item sold out before your order went through. You can join the queue again to try another.',
    windowEnded: 'Your turn ended before an order was placed. You can join the queue again.',
    checking: 'Checking your place…', reconnecting: 'Reconnecting…',
    degraded: 'The queue service is briefly unreachable. Your place is kept, and nobody is admitted meanwhile.',
    badCreds: 'Wrong login ID or password.',
    tooMany: 'Too many attempts, try again in {n} s.', tooManySoon: 'Too many attempts, try again shortly.',
    roomNotFound: 'This waiting room does not exist. Please check the link.',
    busy: 'The shop is busy. Your place is kept — try again.',
    network: 'Cannot reach the server. Check your connection and try again.',
    unavailable: 'The waiting room is briefly unavailable. Trying again in {n} s…',
    signinAgain: 'Your sign-in has expired. Please sign in again.',
    noProducts: 'No products are available right now.', productGone: 'That product is no longer available.',
    error: 'Something went wrong ({code}). Please try again.', leftQueue: 'You left the queue.',
    preH: 'The sale has not started yet', opensIn: 'Opens in {t}', opensAt: 'Opening at {time}', opening: 'Opening now…',
    opensRoom: 'The sale opens {time}.',
    preFifo: 'Your place in line: #{n}',
    preWaiting: { one: '1 person is waiting for the opening', other: '{n} people are waiting for the opening' },
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
    queueH: '대기 중입니다', position: '내 순서: {n}번째',
    ahead: { zero: '내 앞에 아무도 없습니다 — 다음 차례입니다', other: '내 앞에 {n}명' },
    behind: { zero: '아직 내 뒤에는 아무도 없습니다', other: '내 뒤에 {n}명' },
    progress: '입장까지 진행률', etaLabel: '예상 대기 시간', elapsedLabel: '대기한 시간',
    updatedLabel: '마지막 갱신', refLabel: '대기 번호', refHint: '문의하실 때 알려 주세요.',
    keepOpen: '이 페이지를 열어 두세요. 자동으로 갱신됩니다. 페이지를 닫거나 휴대폰이 오래 잠들어 있으면 순번이 해제될 수 있습니다.',
    tierLabel: '연결 방식', etaSoon: '1분 미만', etaUnknown: '아직 알 수 없음', etaEstimating: '계산 중…',
    etaAbout: '약 {d} — {time}쯤', etaPaused: '판매 일시 중지 중에는 알 수 없음',
    etaProvisional: '약 {d}, 계산 중', etaSoonProvisional: '1분 미만, 계산 중',
    tier_sse: '실시간 업데이트', tier_ws: '실시간 업데이트', tier_poll: '몇 초마다 업데이트', viaTab: '{tier}, 다른 탭을 통해 받는 중',
    liveOff: '실시간 연결을 쓸 수 없어 다시 시도하는 중…',
    pausedNote: '판매가 일시 중지되었습니다 — 순번은 그대로 유지됩니다.',
    pausedRoom: '지금은 판매가 일시 중지되었습니다. 지금 대기열에 들어가도 순번은 유지되며, 판매가 재개되면 다시 진행됩니다.',
    resumed: '판매가 재개되었습니다.', noticeLabel: '상점에서 알려 드립니다',
    placeKept: '다시 오셨군요 — 순번이 유지되었습니다. 이 페이지를 열어 두세요. 페이지가 닫히거나 오래 잠들어 있으면 순번이 해제됩니다.',
    leave: '대기열 나가기', leaveQ: '대기열에서 나가시겠습니까? 지금 순번이 사라집니다.', leaveYes: '네, 나가기', leaveNo: '계속 기다리기',
    readyH: '내 차례입니다', left: '주문 가능 시간 {t} 남음', product: '상품', last30: '주문 가능 시간이 30초 남았습니다.',
    quantity: '수량 (1–10)', orderBtn: '주문하기', stock: '재고 {n}개', soldOutShort: '품절',
    doneH: '주문 완료', doneIntro: '감사합니다 — 주문이 확정되었습니다.',
    orderNo: '주문 번호', qtyLabel: '수량', totalLabel: '합계', placedLabel: '주문 시각',
    doneNext: '다음 단계: 주문 번호를 보관해 두세요. 문의하실 때 필요합니다. 이제 이 페이지를 닫으셔도 됩니다.',
    endedH: '대기가 종료되었습니다', reenterBtn: '다시 대기열 입장',
    expired: '대기 순번이 만료되었습니다. 다시 대기열에 들어갈 수 있습니다.',
    idle: '{d} 넘게 자리를 비우셔서 대기 순번이 해제되었습니다. 다시 대기열에 들어갈 수 있습니다.',
    soldOut: '죄송합니다. 주문이 처리되기 전에 상품이 품절되었습니다. 다시 대기열에 들어가 다른 상품을 주문할 수 있습니다.',
    windowEnded: '주문하기 전에 주문 가능 시간이 끝났습니다. 다시 대기열에 들어갈 수 있습니다.',
    checking: '대기 순번을 확인하는 중…', reconnecting: '다시 연결하는 중…',
    degraded: '대기열 서비스에 잠시 연결할 수 없습니다. 순번은 그대로 유지되며, 그동안에는 누구도 입장하지 않습니다.',
    badCreds: '아이디 또는 비밀번호가 올바르지 않습니다.',
    tooMany: '시도가 너무 많습니다. {n}초 후에 다시 시도하세요.', tooManySoon: '시도가 너무 많습니다. 잠시 후 다시 시도하세요.',
    roomNotFound: '존재하지 않는 대기실입니다. 링크를 확인하세요.',
    busy: '주문이 몰려 있습니다. 순서는 유지됩니다. 다시 시도하세요.',
    network: '서버에 연결할 수 없습니다. 연결을 확인하고 다시 시도하세요.',
    unavailable: '대기실에 잠시 연결할 수 없습니다. {n}초 후 다시 시도합니다…',
    signinAgain: '로그인이 만료되었습니다. 다시 로그인하세요.',
    noProducts: '지금 주문할 수 있는 상품이 없습니다.', productGone: '해당 상품을 찾을 수 없습니다.',
    error: '문제가 발생했습니다 ({code}). 다시 시도하세요.', leftQueue: '대기열에서 나왔습니다.',
    preH: '아직 판매가 시작되지 않았습니다', opensIn: '{t} 후 시작', opensAt: '시작 시각: {time}', opening: '곧 시작합니다…',
    opensRoom: '판매 시작: {time}',
    preFifo: '내 대기 순서: {n}번째',
    preWaiting: { other: '{n}명이 시작을 기다리는 중' },
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
// Away this long (a hidden tab, a frozen or sleeping page, a dropped
// connection), the page asks at once whether the place was kept, and says so.
const GAP_MS = 15000;
const ROOM_REFRESH_MS = 30000; // the room's document, while nobody holds a place
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
  screen: '', msg: null, under: null, last: null, stop: null, role: '', skew: 0, announced: 0,
  entry: null, entryEnd: NaN, products: [], ordering: false, ended: null, order: null, opensEnd: NaN,
  // The room's public document (GET /rooms/{room}) and when it was asked for;
  // when the last status came; whether the last 30 s were announced; since
  // when the page was away (hidden) or its connection down; a check under way.
  room: null, roomAt: 0, updated: 0, warned: false, awayAt: 0, downAt: 0, lastTick: Date.now(), checking: false,
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
// HELD_KEY marks, for every tab of this browser (the place itself is per
// tab), that a place in this room may be held: a new tab then asks before
// joining.
const HELD_KEY = 'wr.held.' + room;
const savePlace = () => { stored('sessionStorage', PLACE_KEY, JSON.stringify(place)); stored('localStorage', HELD_KEY, '1'); };
const clearPlace = () => { place = {}; S.entry = null; stored('sessionStorage', PLACE_KEY, null); stored('localStorage', HELD_KEY, null); };
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

// tn words a count with the language's plural rules (Intl.PluralRules):
// the key's forms are {zero?, one?, other}; zero is used for 0 when given.
function tn(key, n) {
  const forms = TEXT[lang][key];
  const form = n === 0 && forms.zero ? 'zero' : new Intl.PluralRules(lang).select(n);
  return (forms[form] || forms.other).replace('{n}', fmtN(n));
}

// unit formats an amount of a unit ('minute', 'hour', 'second').
const unit = (n, u, unitDisplay = 'long') => new Intl.NumberFormat(lang, { style: 'unit', unit: u, unitDisplay }).format(n);

// duration words a whole number of seconds in its largest exact unit (300 → "5 minutes").
function duration(sec) {
  if (sec % 3600 === 0) return unit(sec / 3600, 'hour');
  if (sec % 60 === 0) return unit(sec / 60, 'minute');
  return unit(sec, 'second');
}

// roundedWait words a wait of sec ≥ 60 roughly: to the minute under 10,
// to 5 minutes under 90, else to the hour.
function roundedWait(sec) {
  const min = sec / 60;
  if (min < 10) return unit(Math.round(min), 'minute', 'short');
  if (min < 90) return unit(Math.round(min / 5) * 5, 'minute', 'short');
  return unit(Math.round(min / 60), 'hour', 'short');
}

// timeOf is a time of day on this device's clock (10:42).
const timeOf = (ms, second) => new Date(ms).toLocaleTimeString(lang,
  second ? { hour: 'numeric', minute: '2-digit', second: '2-digit' } : { hour: 'numeric', minute: '2-digit' });

// when is a date and time with its time zone (an opening, an order).
const when = (iso) => new Intl.DateTimeFormat(lang, {
  year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short',
}).format(new Date(iso));

// eta words a QueueStatus's wait: withheld while the room is paused,
// "estimating…" while the server withholds it (etaKnown false: the room
// has not measured its orders yet, or admits nobody), else a rounded
// duration and the clock time it ends at ("about 4 min — around 10:42"),
// never seconds. A provisional estimate (etaProvisional: the room has not
// measured this sale yet and goes by what it expects) is said as such,
// without a clock time: "about 4 min, estimating".
function eta(qs) {
  if (qs.paused) return t('etaPaused');
  if (qs.etaKnown === false) return t('etaEstimating');
  const sec = qs.etaSeconds;
  if (typeof sec !== 'number') return t('etaUnknown');
  if (qs.etaProvisional === true) return sec < 60 ? t('etaSoonProvisional') : t('etaProvisional', { d: roundedWait(sec) });
  if (sec < 60) return t('etaSoon');
  return t('etaAbout', { d: roundedWait(sec), time: timeOf(Date.now() + sec * 1000) });
}

// The queue reference: the room's first letters and the ticket (the queue
// token's seq) in Crockford's base 32, e.g. SALE-003F — short enough to read
// out, and enough for support to find the place.
const B32 = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// ticketOf reads the ticket number (seq) from a queue token's payload; 0
// when there is none. The payload is only read, never trusted.
function ticketOf(token) {
  try {
    const p = String(token).split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const seq = JSON.parse(atob(p + '='.repeat((4 - (p.length % 4)) % 4))).seq;
    return Number.isSafeInteger(seq) && seq > 0 ? seq : 0;
  } catch {
    return 0;
  }
}

function reference(token) {
  let n = ticketOf(token), code = '';
  if (!n) return '';
  for (; n > 0; n = Math.floor(n / 32)) code = B32[n % 32] + code;
  const prefix = room.toUpperCase().replace(/[^A-Z0-9]/g, '').slice(0, 4) || 'WR';
  return prefix + '-' + code.padStart(4, '0');
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

// shout says something at once (the assertive region): your turn, time running out.
// The same words again are said again.
function shout(text) {
  const el = $('alert');
  if (el.textContent !== text) return setText(el, text);
  setText(el, '');
  setTimeout(() => setText(el, text), 100);
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
  document.title = t('title');
  showRoom();
  notices();
  if (S.msg) say(S.msg.key, S.msg.params, S.msg.error);
  if (['queue', 'prequeue', 'closed'].includes(S.screen)) render(S.last);
  if (S.screen === 'ready') { fillProducts(); tick(); }
  setText($('ended-text'), endedText());
  if (S.order) summary(S.order);
}

// --- screens ----------------------------------------------------------------

// Screens of a user who holds a place, and of one who has none yet.
const HOLDING_SCREENS = ['queue', 'prequeue', 'closed'];
const START_SCREENS = ['login', 'enter'];

// show switches screens. Focus moves to the new heading only when the focused
// element was just hidden, so status changes never pull focus away from the user.
function show(name) {
  if (S.screen === name) return;
  S.screen = name;
  for (const id of SCREENS) $(id).hidden = id !== name;
  $('leave').hidden = !['queue', 'ready', 'prequeue'].includes(name) && !(name === 'closed' && place.token);
  $('leave-confirm').hidden = true;
  $('leave-btn').hidden = false;
  say(null);
  notices();
  const had = document.activeElement;
  if (had && had.closest('[hidden]')) $(name).querySelector('h2').focus();
}

// showRoom names the room: its display name and description when the
// operator set them, else its id.
function showRoom() {
  const r = S.room || {};
  setText($('room'), r.displayName || t('room', { room }));
  $('room').classList.toggle('room-name', Boolean(r.displayName));
  setText($('room-desc'), r.description || '');
  $('room-desc').hidden = !r.description;
  const opens = r.opensAt && Date.parse(r.opensAt) > Date.now();
  setText($('enter-opens'), opens ? t('opensRoom', { time: when(r.opensAt) }) : '');
  $('enter-opens').hidden = !opens;
}

// loadRoom reads the room's public document (no token); a failure keeps the last one.
async function loadRoom() {
  S.roomAt = Date.now();
  const res = await api('GET', '/rooms/' + encodeURIComponent(room)).catch(() => null);
  if (!res || !res.ok) return;
  S.room = res.data;
  showRoom();
  notices();
}

// notices shows the room's pause and the operator's message: from the last
// status while a place is held, from the room's document before entering.
function notices() {
  const holding = HOLDING_SCREENS.includes(S.screen);
  const src = (holding ? S.last : START_SCREENS.includes(S.screen) ? S.room : null) || {};
  const paused = Boolean(src.paused), msg = typeof src.message === 'string' ? src.message : '';
  setText($('paused-note'), paused ? t(holding ? 'pausedNote' : 'pausedRoom') : '');
  $('paused-note').hidden = !paused;
  setText($('notice-text'), msg);
  $('notice').hidden = !msg;
}

// news is what a status changes of the pause and the message, to announce
// ('' when nothing): a paused room, a resumed one, a new message.
function news(prev, qs) {
  const parts = [];
  if (qs.paused && !(prev && prev.paused)) parts.push(t('pausedNote'));
  else if (!qs.paused && prev && prev.paused) parts.push(t('resumed'));
  if (qs.message && qs.message !== (prev && prev.message)) parts.push(`${t('noticeLabel')}: ${qs.message}`);
  return parts.join(' ');
}

// render is the one sink for QueueStatus objects, whichever transport sent them.
function render(qs) {
  if (!qs) return;
  const prev = S.last;
  S.last = qs;
  S.updated = Date.now();
  if (qs.queueToken && place.token) { // a ticket given at the opening
    place.token = qs.queueToken;
    savePlace();
  }
  if (qs.status === 'READY') return ready(qs);
  const said = news(prev, qs);
  if (qs.status === 'PREQUEUE') prequeue(qs, said);
  else if (qs.status === 'CLOSED') closed(qs, said);
  else if (qs.status === 'WAITING') waiting(qs, said);
  notices();
}

// waiting shows the place in line: position, who is ahead and behind, the
// wait, when it was last heard of, the connection and the reference.
function waiting(qs, said) {
  place.start = Math.max(place.start || 0, qs.position);
  place.at = place.at || Date.now();
  savePlace();
  const first = S.screen !== 'queue';
  show('queue');
  setText($('position'), t('position', { n: qs.position }));
  setText($('ahead'), tn('ahead', Math.max(0, qs.position - 1)));
  setText($('behind'), tn('behind', Math.max(0, (qs.waiting || 0) - qs.position)));
  setText($('eta'), eta(qs));
  setText($('updated'), timeOf(S.updated, true));
  showTier();
  const ref = reference(place.token);
  setText($('ref'), ref);
  $('ref-row').hidden = !ref;
  // From the position at entry (0) to the front (1).
  $('progress').value = place.start > 1 ? (place.start - qs.position) / (place.start - 1) : 1;
  document.title = `#${fmtN(qs.position)} · ${t('title')}`;
  tick();
  announce(said || `${t('position', { n: qs.position })}. ${tn('ahead', Math.max(0, qs.position - 1))}. ${t('etaLabel')}: ${eta(qs)}.`, first || Boolean(said));
}

// prequeue shows the countdown to a scheduled opening. The time left comes
// from the server (opensInMs), so a wrong client clock does not matter; the
// opening time is shown with its time zone.
function prequeue(qs, said) {
  place.at = place.at || Date.now();
  savePlace();
  const first = S.screen !== 'prequeue';
  if (typeof qs.opensInMs === 'number') S.opensEnd = Date.now() + qs.opensInMs;
  show('prequeue');
  setText($('opens-at'), qs.opensAt ? t('opensAt', { time: when(qs.opensAt) }) : '');
  setText($('pre-place'), qs.position ? t('preFifo', { n: qs.position }) : t('preRandom'));
  setText($('pre-waiting'), qs.waiting ? tn('preWaiting', qs.waiting) : '');
  document.title = t('preH');
  tick();
  announce(said || `${t('preH')}. ${$('opens-in').textContent}`, first || Boolean(said));
}

// closed is the friendly screen of a room that refuses entries; a user who
// holds a place keeps it and keeps following, in case the room reopens.
function closed(qs, said) {
  const first = S.screen !== 'closed';
  show('closed');
  $('closed-kept').hidden = !qs;
  if (qs) setText($('closed-kept'), qs.position ? t('closedKept', { n: qs.position }) : t('closedKeptPre'));
  document.title = t('closedH');
  announce(said || `${t('closedH')}. ${t('closedP')}`, first || Boolean(said));
}

// showTier names the connection in plain words; a following tab names its leader's.
function showTier() {
  const el = $('tier'), name = t('tier_' + tier);
  el.dataset.tier = tier;
  el.dataset.role = S.role;
  setText(el, S.role === 'follower' ? t('viaTab', { tier: name }) : name);
}

// ready shows the order form: focus moves to its heading and "your turn" is
// said at once, so no key pressed while waiting lands on anything else.
function ready(qs) {
  if (GATEWAY) return back(qs);
  stopFollow();
  const first = S.screen !== 'ready';
  S.entry = qs.entryToken;
  S.entryEnd = Date.parse(qs.entryExpiresAt);
  // The last 30 s are announced once, when the window was longer than that.
  if (first) S.warned = !(S.entryEnd - (Date.now() + S.skew) > 30000);
  $('progress').value = 1;
  show('ready');
  document.title = t('readyH');
  tick();
  if (S.screen !== 'ready') return; // the window had already ended
  if (first) {
    $('ready-h').focus();
    shout(`${t('readyH')}. ${$('countdown').textContent}`);
  }
  loadProducts();
}

// end shows why a place ended (key: expired, idle, soldOut, windowEnded;
// secs: the idle timeout) and offers to enter again.
function end(key, secs) {
  stopFollow();
  clearPlace();
  S.ended = { key, secs };
  setText($('ended-text'), endedText());
  show('ended');
  document.title = t('title');
  announce(endedText(), true);
}

function endedText() {
  if (!S.ended) return '';
  return S.ended.key === 'idle' ? t('idle', { d: duration(S.ended.secs) }) : t(S.ended.key);
}

// lost ends a place the server no longer holds, with the reason it gave:
// dropped as idle (with the timeout), or expired.
function lost(info) {
  const secs = info && info.reason === 'idle' ? Number(info.idleTimeoutSeconds) : 0;
  if (secs > 0) end('idle', secs);
  else end('expired');
}

function needLogin(key) {
  S.access = null;
  stored('sessionStorage', 'wr.access', null);
  show('login');
  if (key) say(key, {}, true);
}

// tick runs every second: time spent waiting, the countdowns, a gap in its
// own beat while visible (the page was frozen or the device asleep; a hidden
// tab's timers are slowed, and visibility() covers its return), the room's
// document.
function tick() {
  const now = Date.now();
  if (now - S.lastTick > GAP_MS && document.visibilityState === 'visible') checkPlace();
  S.lastTick = now;
  if (START_SCREENS.includes(S.screen) && now - S.roomAt > ROOM_REFRESH_MS) loadRoom();
  if (S.screen === 'queue' && place.at) setText($('elapsed'), clock(now - place.at));
  if (S.screen === 'prequeue') {
    const left = S.opensEnd - now;
    setText($('opens-in'), !Number.isFinite(left) ? '' : left > 0 ? t('opensIn', { t: clock(left) }) : t('opening'));
  }
  if (S.screen !== 'ready') return;
  const left = S.entryEnd - (now + S.skew);
  if (left <= 0 && !S.ordering) return end('windowEnded');
  setText($('countdown'), Number.isFinite(left) ? t('left', { t: clock(left) }) : '');
  $('countdown').classList.toggle('urgent', left < 30000);
  if (left <= 30000 && !S.warned) {
    S.warned = true;
    shout(t('last30'));
  }
}

// --- presence -----------------------------------------------------------------

// A hidden tab keeps its connection (on a desktop it stays open and counts as
// presence). When the page comes back after a long gap — hidden, frozen,
// asleep — it asks at once whether the place was kept, and says which.
function visibility() {
  if (document.visibilityState === 'hidden') {
    S.awayAt = S.awayAt || Date.now();
    return;
  }
  const away = S.awayAt ? Date.now() - S.awayAt : 0;
  S.awayAt = 0;
  if (away >= GAP_MS) checkPlace();
}

// checkPlace asks GET position about a held place after a gap: kept (the
// page says so), or gone (with the reason).
async function checkPlace() {
  if (!HOLDING_SCREENS.includes(S.screen) || S.checking) return;
  S.checking = true;
  const res = await api('GET', roomPath('position'), { token: place.token }).catch(() => null);
  S.checking = false;
  if (!HOLDING_SCREENS.includes(S.screen)) return;
  if (res && [401, 403, 404].includes(res.status)) {
    share({ t: 'gone', info: res.data });
    return lost(res.data);
  }
  if (!res || !res.ok) return;
  render(res.data);
  if (HOLDING.includes(res.data.status)) welcomeBack();
}

// welcomeBack says the place was kept, for a while.
function welcomeBack() {
  say('placeKept');
  setTimeout(() => {
    if (S.msg && S.msg.key === 'placeKept') say(null);
    if (S.under && S.under.key === 'placeKept') S.under = null;
  }, 60000);
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

// A transport delivers QueueStatus objects to h.status, calls h.gone(info) when the
// server holds no place for us (info: its refusal, with the reason if any), h.link(ok) when the connection drops or
// recovers, h.degraded(d) when the server says it lost (d) or regained its
// queue store, h.fail(status) when its tier does not work here (it returns
// true if the caller moved on to the next tier), and h.replaced() when the
// server ended the stream for a newer one of the same user (another tab,
// browser or device). It returns a stop function.

// probe asks GET position why a stream ended: {gone, info}, {status} or {} (down).
async function probe() {
  const res = await api('GET', roomPath('position'), { token: place.token }).catch(() => null);
  if (res && [401, 403, 404].includes(res.status)) return { gone: true, info: res.data };
  return res && res.ok ? { status: res.data } : {};
}

// pushTier makes a push transport from open(on), which connects and returns a
// close function, and calls on.status(qs), on.gone(info), on.restart() (the server
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
      gone(info) { if (!stopped) { shut(); h.gone(info); } },
      degraded(m) { if (!stopped && m) h.degraded(!!m.degraded); },
      restart() { if (!stopped) { shut(); later(jitter(2000, 0.5)); } },
      replaced() { if (!stopped) { shut(); h.replaced(); } },
      async broken() {
        if (stopped || !close) return;
        const delivered = got;
        shut();
        const p = await probe();
        if (stopped) return;
        if (p.gone) return h.gone(p.info);
        if (!p.status) h.link(false);
        else {
          h.link(true);
          h.status(p.status);
          if (stopped) return; // the status ended the wait (READY)
          // Refused before saying anything while the API answers: this
          // tier is blocked on the way (or switched off), not the server.
          if (!delivered) {
            if (h.fail(p.status)) return;
            notice('liveOff');
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
    es.addEventListener('gone', (e) => on.gone(parse(e.data)));
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
      else if (m && m.type === 'gone') { done = true; on.gone(m); }
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
      if (res && [401, 403, 404].includes(res.status)) return h.gone(res.data);
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
      gone(info) { share({ t: 'gone', info }); lost(info); },
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
  if (d) notice('degraded');
  else clearNotice('degraded');
}

// link shows a dropped connection, and when it comes back after a long
// gap, says the place was kept (the server answered with a status).
function link(ok) {
  if (!ok) {
    S.downAt = S.downAt || Date.now();
    return notice('reconnecting');
  }
  const gap = S.downAt ? Date.now() - S.downAt : 0;
  S.downAt = 0;
  if (gap >= GAP_MS && HOLDING_SCREENS.includes(S.screen)) welcomeBack();
  else clearNotice('reconnecting', 'liveOff');
}

// notice shows a passing connection notice (NOTICES) over the message on
// screen, which comes back when the notice is cleared: a "welcome back"
// outlives the reconnect that often follows a wake.
const NOTICES = ['reconnecting', 'liveOff', 'degraded'];
function notice(key) {
  if (!S.msg || !NOTICES.includes(S.msg.key)) S.under = S.msg;
  say(key);
}

// clearNotice ends the notice shown if it is one of keys, bringing back
// the message it covered.
function clearNotice(...keys) {
  if (!S.msg || !keys.includes(S.msg.key)) return;
  const m = S.under;
  S.under = null;
  if (m) say(m.key, m.params, m.error);
  else say(null);
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
      if (S.role === 'follower') lost(m.info);
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

// enter joins the queue. While the server answers 503 (its queue store
// briefly unreachable) the page asks again by itself, further apart each
// time (unavailableWait), saying when; the button stays disabled meanwhile.
async function enter(ev) {
  if (!hasAccess()) return needLogin('signinAgain');
  const res = await busyWhile(ev.currentTarget, async () => {
    for (let n = 0; ; n++) {
      const res = await api('POST', roomPath('enter'), { token: S.access }).catch(() => null);
      if (!res || res.status !== 503) return res;
      await sleep(unavailableWait(res, n));
    }
  });
  if (!res) return say('network', {}, true);
  if (res.ok) return entered(res.data);
  if (res.status === 401) needLogin('signinAgain');
  else if (res.status === 404) say('roomNotFound', {}, true);
  else if (res.status === 423 && res.data.error === 'room_closed') { S.last = null; closed(null); }
  else if (res.status === 429) tooMany(res);
  else sayError(res);
}

// askLeave asks before leaving: focus goes to "Stay in line", so no single
// key press gives the place up.
function askLeave() {
  $('leave-btn').hidden = true;
  $('leave-confirm').hidden = false;
  $('leave-no').focus();
}

function keepPlace() {
  $('leave-confirm').hidden = true;
  $('leave-btn').hidden = false;
  $('leave-btn').focus();
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

// entered keeps the place an enter answered and follows it; focus lands
// on the place (the position, or the countdown to the opening).
function entered(qs) {
  place.token = qs.queueToken || place.token;
  place.at = place.at || Date.now();
  savePlace();
  track(qs);
  if (S.screen === 'queue') $('position').focus();
  else if (S.screen === 'prequeue') $('opens-in').focus();
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

// fillProducts lists the products as choices, each with its price and stock
// on lines of their own where the screen is narrow, so nothing is cut.
function fillProducts() {
  const keep = chosen();
  $('product-list').replaceChildren(...S.products.map(productChoice));
  const pick = S.products.find((p) => String(p.id) === keep && p.stock > 0) || S.products.find((p) => p.stock > 0);
  if (pick) $('product-' + pick.id).checked = true;
  $('order-btn').disabled = !pick;
  limitQuantity();
}

function productChoice(p) {
  const input = document.createElement('input');
  Object.assign(input, { type: 'radio', name: 'product', value: String(p.id), id: 'product-' + p.id, required: true, disabled: p.stock <= 0 });
  const label = document.createElement('label');
  label.className = 'choice';
  label.htmlFor = input.id;
  const part = (cls, text) => {
    const el = document.createElement('span');
    el.className = cls;
    el.textContent = text;
    return el;
  };
  label.append(input, part('choice-name', p.name), part('choice-price', money(p.price)),
    part('choice-stock', p.stock > 0 ? t('stock', { n: p.stock }) : t('soldOutShort')));
  return label;
}

// chosen is the chosen product's id ('' when none).
function chosen() {
  const c = document.querySelector('#product-list input:checked');
  return c ? c.value : '';
}

// limitQuantity keeps the quantity within 1–10 and the chosen product's stock.
function limitQuantity() {
  const p = S.products.find((x) => String(x.id) === chosen());
  $('quantity').max = String(Math.max(1, Math.min(10, p ? p.stock : 10)));
}

const productOf = (id) => S.products.find((p) => p.id === id);

async function order(ev) {
  ev.preventDefault();
  const body = { productId: Number(chosen()), quantity: Number($('quantity').value) };
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

// ordered shows an order: number, product, quantity, total and the next
// step. reloaded: read back after a reload (GET /orders), said without alarm.
function ordered(o, reloaded) {
  stopFollow();
  S.order = o;
  clearPlace();
  summary(o);
  show('order-result');
  document.title = t('doneH');
  if (reloaded) return;
  announce(`${t('doneH')}. ${t('orderNo')} ${o.orderId}. ${$('done-product').textContent} × ${fmtN(o.quantity)}. ${$('done-total').textContent}`, true);
}

// summary fills the order's summary; the product's name, the total and the
// time come from the order, or else from the product list the page read.
function summary(o) {
  const p = productOf(o.productId);
  setText($('done-id'), String(o.orderId));
  setText($('done-product'), o.productName || (p ? p.name : '#' + o.productId));
  setText($('done-qty'), fmtN(o.quantity));
  const price = typeof o.unitPrice === 'number' ? o.unitPrice : p && p.price;
  const total = typeof o.total === 'number' ? o.total : typeof price === 'number' ? price * o.quantity : null;
  setText($('done-total'), total === null ? '' : money(total));
  $('done-total-row').hidden = total === null;
  setText($('done-at'), o.placedAt ? when(o.placedAt) : '');
  $('done-at-row').hidden = !o.placedAt;
}

// lastOrder is the signed-in user's newest order in this room, or null.
async function lastOrder() {
  if (GATEWAY || !hasAccess()) return null;
  const res = await api('GET', '/orders?room=' + encodeURIComponent(room), { token: S.access }).catch(() => null);
  const list = res && res.ok && Array.isArray(res.data.orders) ? res.data.orders : [];
  return list[0] || null;
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
  // Nobody in this browser held a place here: join at once (asking GET
  // position first would only be a 401 in the console).
  if (!place.at && !stored('localStorage', HELD_KEY)) return join();
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
  if (res && res.status === 503) return unavailableWait(res, n);
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
  else sayError(res);
  return -1;
}

// unavailableWait says that the server is briefly unavailable (503) and
// returns how long to wait before the next attempt: its Retry-After, but
// at least the nth step of the backoff, so that pages left open through
// a long outage do not all ask again every second.
function unavailableWait(res, n) {
  const wait = Math.max(res.wait === null ? 0 : res.wait, backoff(n));
  say('unavailable', { n: Math.max(1, Math.round(wait / 1000)) }, true);
  return wait;
}

function giveUp(key) {
  show('enter');
  say(key, {}, true);
  return null;
}

// backTo is where an admitted visitor goes: ?return= when it is a path on
// this site outside the waiting room's own (/_wr/), else "/". The return
// is resolved as a URL and accepted only when it is this page's origin; the
// path it gives is resolved again, so what the visitor is sent to is what
// was checked: "/.//evil.example" resolves to the path "//evil.example",
// which on its own names another site.
function backTo() {
  const r = new URLSearchParams(location.search).get('return') || '';
  if (!r.startsWith('/')) return '/';
  let u, to;
  try {
    u = new URL(r, location.href);
    to = u.pathname + u.search + u.hash;
    if (u.origin !== location.origin || new URL(to, location.href).href !== u.href) return '/';
  } catch {
    return '/';
  }
  if (/^\/_wr(\/|$)/.test(u.pathname) || (BASE && u.pathname.startsWith(BASE + '/'))) return '/';
  return to;
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
// whether this browser already holds one. A signed-in user who ordered in
// this room sees that order again (a reload after ordering), not the queue.
async function resume() {
  if (place.token) {
    say('checking');
    return follow(null);
  }
  const start = startScreen();
  if (start === 'enter') say('checking');
  else show(start);
  const [res, o] = await Promise.all([api('GET', roomPath('position')).catch(() => null), lastOrder()]);
  const idle = !S.screen || START_SCREENS.includes(S.screen);
  if (res && res.ok && idle) return track(res.data);
  if (o && idle) return ordered(o, true);
  if (!S.screen) show(start);
}

function init() {
  $('login-form').addEventListener('submit', login);
  $('enter-btn').addEventListener('click', enterClick);
  $('reenter-btn').addEventListener('click', enterClick);
  $('again-btn').addEventListener('click', enterClick);
  $('leave-btn').addEventListener('click', askLeave);
  $('leave-no').addEventListener('click', keepPlace);
  $('leave-yes').addEventListener('click', leave);
  $('leave-confirm').addEventListener('keydown', (ev) => { if (ev.key === 'Escape') keepPlace(); });
  $('order-form').addEventListener('submit', order);
  $('product-list').addEventListener('change', limitQuantity);
  document.addEventListener('visibilitychange', visibility);
  document.querySelectorAll('.lang').forEach((b) => b.addEventListener('click', () => setLang(b.dataset.lang)));
  if (chan) chan.onmessage = shared;
  setLang(lang);
  loadRoom();
  setInterval(tick, 1000);
  if (GATEWAY) arrive();
  else resume();
}

init();

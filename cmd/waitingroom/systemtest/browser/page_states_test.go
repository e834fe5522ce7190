package browser

// End-to-end tests of the waiting page's honest states in headless
// Chromium, against a real server with real Redis and Postgres: a paused
// room, the operator's message (live and after a reload), a place dropped
// as idle, the waiting screen's details, focus and announcements at READY,
// leaving only after a confirmation, and the order's summary (also after a
// reload) — in English and Korean, at desktop (1280×800) and phone
// (390×844) sizes.
//
// Screenshots (docs/page-*.png) are written like page_test.go's, to
// $WR_TEST_ARTIFACTS/<test name>/ when that is set.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/queue"
)

// pageSize is a viewport the page is tried at, in one language.
type pageSize struct {
	name          string
	width, height int64
	mobile        bool
	ko            bool
}

// pageSizes: English on a desktop, Korean on a phone.
var pageSizes = []pageSize{
	{name: "desktop-en", width: 1280, height: 800},
	{name: "phone-ko", width: 390, height: 844, mobile: true, ko: true},
}

// words is what the page says in one language, as the tests check it.
type words struct {
	paused, etaPaused, resumedETA, notice, idle, readyH, last30, left, doneH, total, leftQueue string
}

var pageWords = map[bool]words{
	false: {
		paused: "The sale is paused — your place is kept.", etaPaused: "on hold while the sale is paused",
		resumedETA: "estimating…", notice: "A message from the shop",
		idle:   "You were away longer than 5 minutes, so your place was released. You can join the queue again.",
		readyH: "It's your turn", last30: "30 seconds left to place your order.", left: "left to order",
		doneH: "Order placed", total: "$20.00", leftQueue: "You left the queue.",
	},
	true: {
		paused: "판매가 일시 중지되었습니다 — 순번은 그대로 유지됩니다.", etaPaused: "판매 일시 중지 중에는 알 수 없음",
		resumedETA: "계산 중…", notice: "상점에서 알려 드립니다",
		idle:   "5분 넘게 자리를 비우셔서 대기 순번이 해제되었습니다. 다시 대기열에 들어갈 수 있습니다.",
		readyH: "내 차례입니다", last30: "주문 가능 시간이 30초 남았습니다.", left: "남음",
		doneH: "주문 완료", total: "US$20.00", leftQueue: "대기열에서 나왔습니다.",
	},
}

// sizedTab opens a tab at the size, in a browser of the size's language.
func sizedTab(t *testing.T, in *systemtest.Instance, sz pageSize) *page {
	t.Helper()
	var b *browser
	if sz.ko {
		b = newBrowser(t, "lang=ko-KR", "accept-lang=ko-KR,ko")
	} else {
		b = newBrowser(t, "lang=en-US", "accept-lang=en-US,en")
	}
	p := b.tab(in)
	var opts []chromedp.EmulateViewportOption
	if sz.mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	p.do("size "+sz.name, chromedp.EmulateViewport(sz.width, sz.height, opts...))
	return p
}

// enterAs opens the room's page, signs user in and enters the queue.
func (p *page) enterAs(user string, sz pageSize) {
	p.t.Helper()
	p.open("/rooms/default?transport=sse")
	p.waitJS("the sign-in form", shown("login"))
	want := map[bool]string{false: "en", true: "ko"}[sz.ko]
	if got := eval[string](p, `document.documentElement.lang`); got != want {
		p.t.Fatalf("page language = %q, want %q", got, want)
	}
	p.signIn(user)
	p.click("#enter-btn")
	p.waitJS("the queue", shown("queue"))
}

// atPosition is a JS condition: the queue shows position n, in either language.
func atPosition(n int) string {
	return fmt.Sprintf(`%s && [%q, %q].includes(%s)`, shown("queue"), fmt.Sprintf("You are #%d", n), fmt.Sprintf("내 순서: %d번째", n), textOf("position"))
}

// docShot takes a screenshot for docs/ from the English run only (the
// page's body is at most 32rem wide, so the README's table lines up).
func (p *page) docShot(sz pageSize, name string) {
	p.t.Helper()
	if !sz.ko {
		p.shot(name)
	}
}

// TestPageStatesPausedAndMessage: the operator pauses the room and writes
// to its waiting users; the page says the sale is paused, withholds the
// ETA, shows and announces the message, keeps both across a reload, and
// clears each when the operator does.
func TestPageStatesPausedAndMessage(t *testing.T) {
	systemtest.Parallel(t)
	for _, sz := range pageSizes {
		t.Run(sz.name, func(t *testing.T) {
			systemtest.Parallel(t)
			w := pageWords[sz.ko]
			_, in := pageEnv(t, nil)
			in.Enter(systemtest.User(1), "default")
			p := sizedTab(t, in, sz)
			p.enterAs(systemtest.User(2), sz)
			p.waitJS("position 2", atPosition(2))

			in.MustPutRoom("default", map[string]any{"paused": true})
			p.waitJS("the pause", `!document.getElementById('paused-note').hidden && `+textOf("paused-note")+fmt.Sprintf(` === %q`, w.paused))
			if got := p.text("eta"); got != w.etaPaused {
				t.Errorf("ETA while paused = %q, want %q", got, w.etaPaused)
			}
			p.waitJS("the pause announced", textOf("announce")+fmt.Sprintf(`.includes(%q)`, w.paused))
			p.docShot(sz, "page-paused")

			const msg = "The sale restarts at 10:30.\nThank you for waiting."
			in.MustPutRoom("default", map[string]any{"message": msg})
			p.waitJS("the message", `!document.getElementById('notice').hidden && `+textOf("notice-text")+fmt.Sprintf(` === %q`, msg))
			p.waitJS("the message announced", textOf("announce")+fmt.Sprintf(` === %q`, w.notice+": "+msg))
			if got := p.text("notice-label"); got != w.notice {
				t.Errorf("the message's label = %q, want %q", got, w.notice)
			}
			p.docShot(sz, "page-message")

			p.do("reload", chromedp.Reload())
			p.waitJS("the message after a reload", atPosition(2)+` && `+textOf("notice-text")+fmt.Sprintf(` === %q`, msg)+
				` && `+textOf("paused-note")+fmt.Sprintf(` === %q`, w.paused))

			in.MustPutRoom("default", map[string]any{"message": "", "paused": false})
			p.waitJS("both cleared", `document.getElementById('notice').hidden && document.getElementById('paused-note').hidden`)
			p.waitJS("the ETA back", textOf("eta")+fmt.Sprintf(` !== %q`, w.etaPaused))
			p.waitJS("still in line", atPosition(2))
		})
	}
}

// TestPageStatesIdleReason: a place dropped as idle ends with the reason
// and the server's timeout (5 minutes by default), not a bare "expired".
func TestPageStatesIdleReason(t *testing.T) {
	systemtest.Parallel(t)
	for _, sz := range pageSizes {
		t.Run(sz.name, func(t *testing.T) {
			systemtest.Parallel(t)
			e, in := pageEnv(t, nil)
			in.Enter(systemtest.User(1), "default")
			p := sizedTab(t, in, sz)
			p.enterAs(systemtest.User(2), sz)
			p.waitJS("position 2", atPosition(2))
			systemtest.WaitFor(t, "the page's stream", func() bool { return in.StreamsOpen("sse") == 1 })

			// An admission run with a far shorter idle timeout, once the
			// expected returns are made past, drops the page's user
			// although its stream is open (and user1, who is never seen).
			strict := queue.New(e.Redis, queue.Options{Prefix: e.Prefix, IdleTimeout: time.Millisecond})
			systemtest.WaitFor(t, "user2 dropped as idle", func() bool {
				systemtest.AgeSeen(t, e, in, "default")
				if _, err := strict.Admit(context.Background(), "default", 8); err != nil {
					t.Fatal(err)
				}
				return systemtest.Zrank(t, e, "default", "2") == 0
			})
			w := pageWords[sz.ko]
			p.waitJS("the idle reason", shown("ended")+` && `+textOf("ended-text")+fmt.Sprintf(` === %q`, w.idle))
			p.docShot(sz, "page-idle")
			p.click("#reenter-btn")
			p.waitJS("back in line, first (user1 was dropped too)", atPosition(1))
		})
	}
}

// TestPageStatesComingBack: a page hidden and frozen (as a phone does with
// a page in the background) for longer than the page's gap asks at once,
// when it is shown again, whether the place was kept, and says so.
func TestPageStatesComingBack(t *testing.T) {
	systemtest.Parallel(t)
	sz := pageSizes[0]
	_, in := pageEnv(t, nil)
	in.Enter(systemtest.User(1), "default")
	p := sizedTab(t, in, sz)
	p.enterAs(systemtest.User(2), sz)
	p.waitJS("position 2", atPosition(2))
	p.freezeAndWake(16 * time.Second) // longer than the page's gap (GAP_MS)
	p.waitJS("the place kept, said", placeKeptSaid)
	p.waitJS("still in line", atPosition(2))
}

// placeKeptSaid: the page is shown and says the place was kept.
const placeKeptSaid = `document.visibilityState === 'visible' && document.getElementById("message").textContent.startsWith('Welcome back — your place was kept.')`

// freezeAndWake freezes the page (as a phone does with a page in the
// background) for d, then wakes and shows it. Freezing hides the page
// first; waking leaves it hidden until it has the focus again.
func (p *page) freezeAndWake(d time.Duration) {
	p.t.Helper()
	lifecycle := func(s cdppage.SetWebLifecycleStateState) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: s})
			return err
		})
	}
	p.do("freeze", lifecycle(cdppage.SetWebLifecycleStateStateFrozen))
	time.Sleep(d)
	p.do("wake and show", lifecycle(cdppage.SetWebLifecycleStateStateActive),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
			return err
		}))
}

// TestPageNoticeGivesBackTheMessage: a connection notice covers the
// message on screen and gives it back when it clears. The "welcome back"
// said after a wake is said again once an outage of the queue store that
// came after it is over (it used to be cleared with the notice).
func TestPageNoticeGivesBackTheMessage(t *testing.T) {
	systemtest.Parallel(t)
	sz := pageSizes[0]
	e, rp := systemtest.OwnRedisEnv(t)
	in := e.Start(map[string]string{"WR_ADMIT_INTERVAL": "50ms", "WR_TARGET_ACTIVE": "0", "WR_POLL_BANDS": "100:250ms,*:5s"})
	in.Enter(systemtest.User(1), "default")
	p := sizedTab(t, in, sz)
	p.enterAs(systemtest.User(2), sz)
	p.waitJS("position 2", atPosition(2))
	systemtest.WaitFor(t, "the page's stream", func() bool { return in.StreamsOpen("sse") == 1 })
	p.freezeAndWake(16 * time.Second)
	p.waitJS("the place kept, said", placeKeptSaid)

	rp.Kill()
	p.waitJS("the outage notice", textOf("message")+".includes('briefly unreachable')")
	systemtest.StartRedis(t, rp.Dir, rp.Port)
	p.waitJS("the welcome back, said again", placeKeptSaid)
	p.waitJS("still in line", atPosition(2))
}

// TestPageEnterWaitsOutAnOutage: the queue store is down when the visitor
// presses "Join the queue": enter answers 503, and the page says so, with
// when it tries again, and keeps trying on its own (the button disabled
// meanwhile) until the store is back and the visitor is in line.
func TestPageEnterWaitsOutAnOutage(t *testing.T) {
	systemtest.Parallel(t)
	sz := pageSizes[0]
	e, rp := systemtest.OwnRedisEnv(t)
	in := e.Start(map[string]string{"WR_TARGET_ACTIVE": "0"})
	in.Enter(systemtest.User(1), "default")
	p := sizedTab(t, in, sz)
	p.open("/rooms/default?transport=sse")
	p.signIn(systemtest.User(2))
	rp.Kill()
	p.click("#enter-btn")
	p.waitJS("the outage said, with the next attempt",
		textOf("message")+".includes('briefly unavailable. Trying again in') && document.getElementById('enter-btn').disabled")
	systemtest.StartRedis(t, rp.Dir, rp.Port)
	p.waitJS("in line once the store is back", atPosition(2))
}

// TestPageStatesWaitingScreen: the waiting screen says who is ahead and
// behind (plurals by Intl.PluralRules), when it was last updated, the
// connection in plain words, a queue reference derived from the room and
// the ticket, the room's display name and description, and the ETA as a
// rounded duration with a clock time.
func TestPageStatesWaitingScreen(t *testing.T) {
	systemtest.Parallel(t)
	type expect struct {
		room, desc, ahead, behind, tier, eta, one, provisional string
	}
	want := map[bool]expect{
		false: {"Winter sale", "Coats and hats\nWhile stocks last", "2 people ahead of you", "1 person behind you",
			"Live updates", `^about 4 min — around \d{1,2}:\d\d([\s\x{202f}][AP]M)?$`, "1 person ahead of you", "about 4 min, estimating"},
		true: {"Winter sale", "Coats and hats\nWhile stocks last", "내 앞에 2명", "내 뒤에 1명",
			"실시간 업데이트", `^약 4분 — (오전|오후) \d{1,2}:\d\d쯤$`, "내 앞에 1명", "약 4분, 계산 중"},
	}
	for _, sz := range pageSizes {
		t.Run(sz.name, func(t *testing.T) {
			systemtest.Parallel(t)
			x := want[sz.ko]
			_, in := pageEnv(t, nil)
			in.MustPutRoom("default", map[string]any{"displayName": x.room, "description": x.desc})
			in.Enter(systemtest.User(1), "default")
			in.Enter(systemtest.User(2), "default")
			p := sizedTab(t, in, sz)
			p.enterAs(systemtest.User(3), sz)
			p.waitJS("position 3", atPosition(3))
			if got := eval[string](p, `document.activeElement.id`); got != "position" {
				t.Errorf("focus after entering is on %q, want the position", got)
			}
			in.Enter(systemtest.User(4), "default")
			p.waitJS("one behind", textOf("behind")+fmt.Sprintf(` === %q`, x.behind))
			for id, w := range map[string]string{"room": x.room, "room-desc": x.desc, "ahead": x.ahead, "tier": x.tier} {
				if got := eval[string](p, fmt.Sprintf(`document.getElementById(%q).innerText`, id)); got != w {
					t.Errorf("#%s = %q, want %q", id, got, w)
				}
			}
			if got := p.text("updated"); !regexp.MustCompile(`\d{1,2}:\d\d:\d\d`).MatchString(got) {
				t.Errorf("last updated = %q, want a time", got)
			}
			if got, w := p.text("ref"), wantRef(t, p); got != w {
				t.Errorf("reference = %q, want %q", got, w)
			}
			if got := eval[string](p, `eta({status: 'WAITING', etaSeconds: 250, etaKnown: true})`); !regexp.MustCompile(x.eta).MatchString(got) {
				t.Errorf("ETA of 250 s = %q, want %s", got, x.eta)
			}
			if got := eval[string](p, `eta({status: 'WAITING', etaSeconds: 250, etaKnown: true, etaProvisional: true})`); got != x.provisional {
				t.Errorf("provisional ETA of 250 s = %q, want %q", got, x.provisional)
			}
			if got := eval[string](p, `tn('ahead', 1)`); got != x.one {
				t.Errorf("one ahead = %q, want %q", got, x.one)
			}
			if keep := eval[bool](p, `document.querySelector('[data-i18n="keepOpen"]').offsetHeight > 0`); !keep {
				t.Error("no keep-this-page-open advice on the waiting screen")
			}
			p.docShot(sz, "page-waiting")
		})
	}
}

// wantRef is the reference the page should show: "DEFA-" and the ticket
// of the page's queue token in Crockford's base 32, at least 4 digits.
func wantRef(t *testing.T, p *page) string {
	t.Helper()
	tok := eval[string](p, `JSON.parse(sessionStorage.getItem('wr.place.default')).token`)
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("the page's queue token %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Seq int64 }
	if err := json.Unmarshal(raw, &claims); err != nil || claims.Seq <= 0 {
		t.Fatalf("queue token payload %s: %v", raw, err)
	}
	const digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	code := ""
	for n := claims.Seq; n > 0; n /= 32 {
		code = string(digits[n%32]) + code
	}
	return "DEFA-" + strings.Repeat("0", max(0, 4-len(code))) + code
}

// TestPageStatesOpeningTimeZone: before a scheduled opening the page gives
// the opening time with its time zone, on the enter screen and by the
// countdown.
func TestPageStatesOpeningTimeZone(t *testing.T) {
	systemtest.Parallel(t)
	sz := pageSizes[1]
	_, in := pageEnv(t, nil)
	opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	in.MustPutRoom("default", map[string]any{"method": "fifo", "opensAt": opens})
	p := sizedTab(t, in, sz)
	p.do("time zone", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Seoul"})
		return err
	}))
	tz := regexp.MustCompile(`GMT\+9|KST|대한민국 표준시`)
	p.open("/rooms/default")
	p.waitJS("the sign-in form", shown("login"))
	p.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#login-id"), systemtest.User(1)),
		chromedp.SendKeys(chromedp.CSS("#password"), systemtest.TestPassword),
		chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
	)
	p.waitJS("the enter screen with the opening", shown("enter")+` && !document.getElementById('enter-opens').hidden`)
	if got := p.text("enter-opens"); !tz.MatchString(got) {
		t.Errorf("opening on the enter screen = %q, want a time zone", got)
	}
	p.click("#enter-btn")
	p.waitJS("the countdown", shown("prequeue")+` && `+textOf("opens-at")+` !== ''`)
	if got := p.text("opens-at"); !tz.MatchString(got) {
		t.Errorf("opening by the countdown = %q, want a time zone", got)
	}
	p.shot("page-prequeue")
}

// TestPageStatesFocusAndLeaving: after entering focus is on the position;
// leaving asks first (Enter and Escape keep the place); at READY focus
// moves to the order form's heading and "your turn" is said assertively;
// the last 30 s are announced once; leaving at READY, confirmed, leaves.
func TestPageStatesFocusAndLeaving(t *testing.T) {
	systemtest.Parallel(t)
	for _, sz := range pageSizes {
		t.Run(sz.name, func(t *testing.T) {
			systemtest.Parallel(t)
			w := pageWords[sz.ko]
			_, in := pageEnv(t, map[string]string{"WR_ENTRY_TTL": "34s"})
			first := in.Enter(systemtest.User(1), "default").Str("queueToken")
			p := sizedTab(t, in, sz)
			p.enterAs(systemtest.User(2), sz)
			p.waitJS("position 2", atPosition(2))
			if got := eval[string](p, `document.activeElement.id`); got != "position" {
				t.Errorf("focus after entering is on %q, want the position", got)
			}

			// Enter on "Leave the queue" only asks; Enter again keeps the place.
			p.do("focus leave", chromedp.Focus(chromedp.CSS("#leave-btn")))
			p.do("press Enter", chromedp.KeyEvent("\r"))
			p.waitJS("the question", `!document.getElementById('leave-confirm').hidden && document.activeElement.id === 'leave-no'`)
			p.docShot(sz, "page-leave")
			p.do("press Enter", chromedp.KeyEvent("\r"))
			p.waitJS("the question gone", `document.getElementById('leave-confirm').hidden && document.activeElement.id === 'leave-btn'`)
			p.do("press Enter", chromedp.KeyEvent("\r"))
			p.waitJS("the question", `document.activeElement.id === 'leave-no'`)
			p.do("press Escape", chromedp.KeyEvent("\x1b"))
			p.waitJS("the question gone", `document.getElementById('leave-confirm').hidden`)
			p.waitJS("still in line", atPosition(2))

			in.SetTarget("default", 2)
			in.OrderWhenReady("default", first)
			p.waitJS("READY", shown("ready"))
			p.waitJS("focus on the order form's heading", `document.activeElement.id === 'ready-h'`)
			p.waitJS("your turn, said at once", textOf("alert")+fmt.Sprintf(`.startsWith(%q) && `, w.readyH)+textOf("alert")+fmt.Sprintf(`.includes(%q)`, w.left))
			if got := eval[string](p, `document.getElementById('alert').getAttribute('aria-live')`); got != "assertive" {
				t.Errorf("the alert region is %q", got)
			}
			stockFits(t, p)
			p.docShot(sz, "page-ready")
			p.waitJS("the last 30 s", textOf("alert")+fmt.Sprintf(` === %q`, w.last30))

			p.click("#leave-btn")
			p.waitJS("the question", `document.activeElement.id === 'leave-no'`)
			p.click("#leave-yes")
			p.waitJS("left", shown("enter")+` && `+textOf("message")+fmt.Sprintf(` === %q`, w.leftQueue))
		})
	}
}

// stockFits checks that every product's stock is shown whole, inside its
// choice and the viewport.
func stockFits(t *testing.T, p *page) {
	t.Helper()
	p.waitJS("the products", `document.querySelectorAll('#product-list input').length === 3`)
	bad := eval[string](p, `[...document.querySelectorAll('#product-list label')].map((l) => {
		const s = l.querySelector('.choice-stock'), r = s.getBoundingClientRect(), lr = l.getBoundingClientRect();
		return (r.right <= lr.right && r.right <= document.documentElement.clientWidth && s.scrollWidth <= s.clientWidth + 1 && r.width > 0) ? '' : s.textContent;
	}).join('')`)
	if bad != "" {
		t.Errorf("stock cut: %q", bad)
	}
}

// TestPageStatesOrderSummary: after ordering the page shows the order's
// number, product, quantity and total with a next step; a reload shows the
// same summary (GET /api/v1/orders?room=), not "Join the queue".
func TestPageStatesOrderSummary(t *testing.T) {
	systemtest.Parallel(t)
	for _, sz := range pageSizes {
		t.Run(sz.name, func(t *testing.T) {
			systemtest.Parallel(t)
			w := pageWords[sz.ko]
			_, in := pageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "1"})
			p := sizedTab(t, in, sz)
			p.open("/rooms/default")
			p.signIn(systemtest.User(1))
			p.click("#enter-btn")
			p.waitJS("READY", shown("ready"))
			stockFits(t, p)
			p.do("choose 2", chromedp.SetValue(chromedp.CSS("#quantity"), "2"))
			p.click("#order-btn")
			p.waitJS("the order", shown("order-result"))
			got := summaryOf(p)
			if !regexp.MustCompile(`^\d+ \| Demo product 1 \| 2 \| ` + regexp.QuoteMeta(w.total) + `( \| .+)?$`).MatchString(got) {
				t.Errorf("summary = %q", got)
			}
			if h := p.text("done-h"); h != w.doneH {
				t.Errorf("heading = %q, want %q", h, w.doneH)
			}
			if next := p.text("done-next"); next == "" {
				t.Error("no next step")
			}
			p.docShot(sz, "page-ordered")

			p.do("reload", chromedp.Reload())
			p.waitJS("the order after a reload", shown("order-result"))
			// The same order; a reload also says when it was placed.
			again := summaryOf(p)
			if a, b := strings.Split(again, " | "), strings.Split(got, " | "); len(a) < 4 || len(b) < 4 || strings.Join(a[:4], "|") != strings.Join(b[:4], "|") {
				t.Errorf("summary after a reload = %q, want %q", again, got)
			}
			if eval[bool](p, shown("enter")) {
				t.Error("the enter screen after a reload")
			}
		})
	}
}

// summaryOf is the order's summary as "id | product | quantity | total"
// (and " | placed" when the order says when).
func summaryOf(p *page) string {
	p.t.Helper()
	return eval[string](p, `['done-id', 'done-product', 'done-qty', 'done-total', 'done-at']
		.map((id) => document.getElementById(id).textContent).filter((s) => s !== '').join(' | ')`)
}

// pausedShown is a JS condition: the queue screen holds a place while the
// page says the sale is paused (in English) and withholds the ETA.
const pausedShown = `!document.getElementById('queue').hidden && !document.getElementById('paused-note').hidden && ` +
	`document.getElementById('paused-note').textContent === 'The sale is paused — your place is kept.' && ` +
	`document.getElementById('eta').textContent === 'on hold while the sale is paused' && ` +
	`/^You are #\d+$/.test(document.getElementById('position').textContent)`

// TestPageStatesPausedArrival: a visitor who comes to the page while the
// room is paused is told so before entering, joins the line (no error),
// sees the paused queue screen, and reaches READY by itself once the
// operator resumes the room through the admin API.
func TestPageStatesPausedArrival(t *testing.T) {
	systemtest.Parallel(t)
	_, in := pageEnv(t, nil)
	in.Enter(systemtest.User(1), "default")
	in.MustPutRoom("default", map[string]any{"paused": true, "targetActive": 2})
	p := sizedTab(t, in, pageSizes[0])
	p.open("/rooms/default?transport=sse")
	p.signIn(systemtest.User(2))
	p.waitJS("the enter screen says the sale is paused and the line open", shown("enter")+` && !document.getElementById('paused-note').hidden && `+
		textOf("paused-note")+` === 'The sale is paused right now. You can still join the queue: your place is kept, and the line moves again when the sale resumes.'`)
	p.click("#enter-btn")
	p.waitJS("the paused queue screen at #2", pausedShown+` && `+textOf("position")+` === 'You are #2'`)
	if got := p.text("message"); got != "" {
		t.Errorf("the page says %q beside the paused queue, want nothing", got)
	}
	in.MustPutRoom("default", map[string]any{"paused": false})
	p.waitJS("READY after the resume", shown("ready"))
}

// TestPageStatesPausedGatewayArrival: in gateway mode, a visitor sent to
// the page by a protected URL while the room is paused solves the proof of
// work, is queued anonymously and sees the paused state (no error page);
// once the operator resumes the room the page takes the visitor back to
// the URL, now let through by the origin.
func TestPageStatesPausedGatewayArrival(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t, "lang=en-US", "accept-lang=en-US,en")
	in := gatewayPageEnv(t, map[string]string{"WR_TARGET_ACTIVE": "0"}, nil)
	in.MustPutRoom("sale", map[string]any{"paused": true, "targetActive": 5})
	p := b.tab(in)
	p.open("/checkout/cart")
	p.waitJS("the paused queue screen at #1", pausedShown+` && `+textOf("position")+` === 'You are #1'`)
	if got := p.text("message"); got != "" {
		t.Errorf("the page says %q beside the paused queue, want nothing", got)
	}
	back := p.watchBack()
	in.MustPutRoom("sale", map[string]any{"paused": false})
	if got := <-back; !strings.Contains(got, `"href":"/checkout/cart"`) {
		t.Errorf("the way back showed %s, want a link to /checkout/cart", got)
	}
	p.waitOrigin("/checkout/cart", `"room":"sale"`)
}

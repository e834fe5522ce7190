package browser

// End-to-end tests of the operator's seat in the dashboard (web/admin), in
// headless Chromium against real servers: the charts come from the rooms'
// shared history (the same after a reload and from a second instance), the
// changes that stop a sale are confirmed first, the access lists have a
// screen, the audit log shows the changes made, the room's texts for
// waiting users are set from a form, and "what waiting users see" is shown.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"waitingroom/cmd/waitingroom/systemtest"
	"waitingroom/server/admin/audit"
)

// dataOf is a dataset value of the element id, as a number (0 when unset).
func dataOf(p *page, id, key string) int64 {
	p.t.Helper()
	s := eval[string](p, fmt.Sprintf(`document.getElementById(%q).dataset[%q] || ''`, id, key))
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// dialogOpen is true while the confirmation dialog is open.
const dialogOpen = `document.getElementById('confirm').open`

// accessLists reads GET /admin/access.
func accessLists(t *testing.T, in *systemtest.Instance) map[string][]string {
	t.Helper()
	r := systemtest.Do(t, "GET", in.Admin+"/admin/access", systemtest.TestAdminToken, nil)
	if r.Status != 200 {
		t.Fatalf("GET /admin/access: %d %s", r.Status, r.Raw)
	}
	var l map[string][]string
	if err := json.Unmarshal([]byte(r.Raw), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// shownEntries are the entries the access-list screen shows for list.
func shownEntries(p *page, list string) []string {
	p.t.Helper()
	return eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll('#%s-list code')].map((e) => e.textContent)`, list))
}

// TestDashboardHistoryShared: the charts of a room come from the server's
// history: a tab that opens late, a reload and a second operator on
// another instance all draw the same points from the first one the
// history holds, and keep updating live.
func TestDashboardHistoryShared(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	e := systemtest.NewEnv(t)
	vars := map[string]string{"WR_ADMIT_INTERVAL": "50ms", "WR_TARGET_ACTIVE": "0"}
	one, two := e.Start(vars), e.Start(vars)
	for i := 1; i <= 3; i++ {
		one.Enter(systemtest.User(i), "default")
	}
	var pts [][]float64
	systemtest.WaitFor(t, "five points of history", func() bool {
		_, pts = systemtest.HistoryOf(t, one, "default", "")
		return len(pts) >= 5
	})
	first := int64(pts[0][0])

	p := openDashboard(t, b, one, one.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	// The whole history at once, not only what this tab sampled.
	p.waitJS("the history drawn", chartPoints("chart-waiting")+fmt.Sprintf(` >= %d`, len(pts)))
	if got := dataOf(p, "chart-waiting", "first"); got != first {
		t.Fatalf("the chart starts at %d, the history at %d", got, first)
	}
	before := eval[int](p, chartPoints("chart-waiting"))

	p.do("reload", chromedp.Reload())
	p.waitLive()
	p.waitJS("the history after the reload", chartPoints("chart-waiting")+` > 0`)
	if got := eval[int](p, chartPoints("chart-waiting")); got < before {
		t.Errorf("after a reload the chart has %d points, before it %d", got, before)
	}
	if got := dataOf(p, "chart-waiting", "first"); got != first {
		t.Errorf("after a reload the chart starts at %d, want %d", got, first)
	}

	// A second operator, on the other instance.
	q := openDashboard(t, b, two, two.Admin)
	q.giveToken(systemtest.TestAdminToken)
	q.waitLive()
	q.waitJS("the second operator's history", chartPoints("chart-waiting")+fmt.Sprintf(` >= %d`, before))
	for _, id := range []string{"chart-waiting", "chart-active", "chart-admitted"} {
		if x, y := dataOf(p, id, "first"), dataOf(q, id, "first"); x != first || y != first {
			t.Errorf("%s starts at %d and %d, want %d for both", id, x, y, first)
		}
	}

	// Live: users entering through the second instance show in both.
	for i := 4; i <= 5; i++ {
		two.Enter(systemtest.User(i), "default")
	}
	for _, tab := range []*page{p, q} {
		tab.waitJS("five waiting in the chart", `document.querySelector('#chart-waiting .legend .value').textContent === '5'`)
	}
	if x, y := dataOf(p, "chart-waiting", "last"), dataOf(q, "chart-waiting", "last"); x-y > 2000 || y-x > 2000 {
		t.Errorf("the two tabs' last points: %d and %d", x, y)
	}
}

// TestDashboardConfirmations: pausing, the method reject and a limit of 0
// ask first in a dialog; Cancel (or Escape) changes nothing, confirming
// applies; resuming and other changes do not ask.
func TestDashboardConfirmations(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	for i := 1; i <= 4; i++ {
		in.Enter(systemtest.User(i), "default")
	}
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("four waiting", textOf("s-waiting")+` === '4'`)
	notChanged := func(field string, want any) {
		t.Helper()
		p.waitJS("cancelled", `!`+dialogOpen+` && `+textOf("control-msg")+` === 'Cancelled: nothing changed.'`)
		if got := in.AdminRoom("default").Body[field]; got != want {
			t.Fatalf("%s = %v after a cancelled change, want %v", field, got, want)
		}
	}

	// Pause: Cancel, then Escape (by keyboard, the focus back on the button),
	// then confirmed.
	p.click("#pause-btn")
	p.waitJS("the pause question", dialogOpen+` && `+textOf("confirm-h")+` === 'Pause admission in default?' && `+
		textOf("confirm-text")+`.includes('the 4 people waiting keep their place') && document.activeElement.id === 'confirm-cancel'`)
	p.click("#confirm-cancel")
	notChanged("paused", false)
	p.do("pause by keyboard, then Escape", chromedp.Focus(chromedp.CSS("#pause-btn")), chromedp.KeyEvent("\r"))
	p.waitJS("the dialog", dialogOpen)
	p.do("escape", chromedp.KeyEvent(kb.Escape))
	notChanged("paused", false)
	if id := eval[string](p, `document.activeElement.id`); id != "pause-btn" {
		t.Errorf("after Escape the focus is on #%s, want #pause-btn", id)
	}
	// Each key waits for the page to have handled the one before: a key
	// sent while the dialog is still taking the focus lands elsewhere.
	p.do("pause by keyboard, confirmed", chromedp.KeyEvent("\r"))
	p.waitJS("the dialog, Cancel focused", dialogOpen+` && document.activeElement.id === 'confirm-cancel'`)
	p.do("tab to confirm", chromedp.KeyEvent(kb.Tab))
	p.waitJS("Confirm focused", `document.activeElement.id === 'confirm-ok'`)
	p.do("confirm", chromedp.KeyEvent("\r"))
	// The page first: its state (the message, the dialog) is printed if
	// the change never went out.
	p.waitJS("paused shown", textOf("pause-state")+` === 'Paused' && `+textOf("control-msg")+` === 'Saved default: paused = true.'`)
	if in.AdminRoom("default").Body["paused"] != true {
		t.Fatal("the page says paused, the room is not")
	}
	p.click("#pause-btn") // resuming does not ask
	systemtest.WaitFor(t, "running", func() bool { return in.AdminRoom("default").Body["paused"] == false })
	// The page's word that it is saved: its buttons are enabled again.
	p.waitJS("resumed", textOf("control-msg")+` === 'Saved default: paused = false.'`)
	if eval[bool](p, dialogOpen) {
		t.Error("resuming asked for a confirmation")
	}

	// A limit of 0: asked only when it would stop admission.
	setLimit := func(n string) {
		p.setField("target-input", n)
		p.click(`#target-form button[type="submit"]`)
	}
	setLimit("3")
	p.waitJS("limit 3", textOf("control-msg")+` === 'Saved default: targetActive = 3.'`)
	setLimit("0")
	p.waitJS("the limit question", dialogOpen+` && `+textOf("confirm-h")+` === 'Set the admission limit of default to 0?'`)
	p.click("#confirm-cancel")
	notChanged("targetActive", float64(3))
	setLimit("0")
	p.waitJS("the dialog", dialogOpen)
	p.click("#confirm-ok")
	p.waitJS("limit 0", textOf("control-msg")+` === 'Saved default: targetActive = 0.'`)
	if got := in.AdminRoom("default").Num("targetActive"); got != 0 {
		t.Fatalf("targetActive = %d after a confirmed 0", got)
	}

	// The method reject.
	setMethod := func(m string) {
		p.setField("method-input", m)
		p.click(`#method-form button[type="submit"]`)
	}
	setMethod("reject")
	p.waitJS("the reject question", dialogOpen+` && `+textOf("confirm-h")+` === 'Close default (method reject)?'`)
	p.click("#confirm-cancel")
	notChanged("method", "fifo")
	setMethod("reject")
	p.waitJS("the dialog", dialogOpen)
	p.click("#confirm-ok")
	p.waitJS("method reject", textOf("control-msg")+` === 'Saved default: method = reject.'`)
	setMethod("random")
	systemtest.WaitFor(t, "method random", func() bool { return in.AdminRoom("default").Str("method") == "random" })
	if eval[bool](p, dialogOpen) {
		t.Error("the method random asked for a confirmation")
	}
}

// TestDashboardAccessLists: the access-list screen shows the lists, adds
// and removes entries, shows the server's message for an invalid entry,
// and follows a change made by someone else.
func TestDashboardAccessLists(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/access", systemtest.TestAdminToken, `{"allow":["198.51.100.7"]}`); r.Status != 200 {
		t.Fatalf("PUT access: %d %s", r.Status, r.Raw)
	}
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the access lists", shown("access")+` && document.querySelectorAll('#allow-list li').length === 1 && `+
		shown("deny-empty"))

	add := func(list, entry string) {
		t.Helper()
		p.setField(list+"-input", entry)
		p.click("#" + list + `-form button[type="submit"]`)
	}
	add("deny", "203.0.113.0/24")
	p.waitJS("added", textOf("access-msg")+` === 'Added 203.0.113.0/24 to deny.'`)
	add("bypass", "user:7")
	p.waitJS("added", textOf("access-msg")+` === 'Added user:7 to bypass.'`)
	l := accessLists(t, in)
	if !slices.Equal(l["deny"], []string{"203.0.113.0/24"}) || !slices.Equal(l["bypass"], []string{"user:7"}) || !slices.Equal(l["allow"], []string{"198.51.100.7"}) {
		t.Fatalf("lists after two additions: %v", l)
	}
	if got := shownEntries(p, "deny"); !slices.Equal(got, []string{"203.0.113.0/24"}) {
		t.Errorf("deny shown: %v", got)
	}

	// An invalid entry: the server's message, nothing changed.
	add("allow", "nonsense")
	p.waitJS("the server's message", `document.getElementById('access-msg').classList.contains('error') && `+
		textOf("access-msg")+` === 'Not saved: allow: entry "nonsense": want an IP, a CIDR or user:<id> (400).'`)
	if l := accessLists(t, in); !slices.Equal(l["allow"], []string{"198.51.100.7"}) {
		t.Errorf("allow after a refused entry: %v", l["allow"])
	}
	add("deny", "203.0.113.0/24")
	p.waitJS("a duplicate", textOf("access-msg")+` === '203.0.113.0/24 is already in deny.'`)

	// Remove, by keyboard.
	p.do("remove from allow", chromedp.Focus(chromedp.CSS(`#allow-list button[data-entry="198.51.100.7"]`)), chromedp.KeyEvent("\r"))
	p.waitJS("removed", textOf("access-msg")+` === 'Removed 198.51.100.7 from allow.' && `+shown("allow-empty"))
	if l := accessLists(t, in); len(l["allow"]) != 0 || len(l["deny"]) != 1 {
		t.Errorf("lists after the removal: %v", l)
	}
	if !eval[bool](p, `document.querySelector('#allow-list button') === null && document.activeElement.id === 'allow-input'`) {
		t.Error("after the removal the focus is not on the list's input")
	}

	// Someone else's change shows within seconds.
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/access", systemtest.TestAdminToken, `{"deny":["203.0.113.0/24","user:9"]}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	p.waitJS("the other change", `document.querySelectorAll('#deny-list li').length === 2`)
}

// TestDashboardAuditAndTexts: the message form sets and clears the room's
// message, the name and description are set (an invalid one shows the
// server's message), "what waiting users see" follows, and the audit log
// shows each change made through the forms — who, when, what, before →
// after — and one made through the API elsewhere.
func TestDashboardAuditAndTexts(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	qt := in.Enter(systemtest.User(1), "default").Str("queueToken")
	in.Enter(systemtest.User(2), "default")
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the forms and panels", shown("message-form")+` && `+shown("texts-form")+` && `+shown("users")+` && `+shown("audit"))
	// Fixed mode shows just the limit, and no baseline.
	if got := p.text("s-mode"); got != "fixed (limit 0)" {
		t.Errorf("mode = %q, want fixed (limit 0)", got)
	}
	if eval[bool](p, shown("min-field")+` || `+shown("max-field")) {
		t.Error("the adaptive bounds are shown for a fixed room")
	}
	p.waitJS("what waiting users see", textOf("u-eta")+` === 'none: the room admits nobody (limit 0)' && `+
		textOf("u-name")+` === 'default (its id: no display name set)' && `+textOf("u-message")+` === 'none' && `+
		textOf("i-streams")+` === 'SSE 0 · WebSocket 0' && `+textOf("u-longest")+` !== '—'`)

	// The message, through the form.
	msg := "The sale restarts at 10:30"
	p.setField("message-input", msg)
	p.click(`#message-form button[type="submit"]`)
	systemtest.WaitFor(t, "the message", func() bool { return in.AdminRoom("default").Str("message") == msg })
	p.waitJS("saved", textOf("control-msg")+fmt.Sprintf(` === 'Saved default: message = %s.'`, msg))
	p.waitJS("shown", textOf("u-message")+fmt.Sprintf(` === %q`, msg))
	if got := in.Position("default", qt).Str("message"); got != msg {
		t.Errorf("a waiting user's status carries message %q, want %q", got, msg)
	}

	// The name and description; a name too long is refused.
	p.setField("display-input", strings.Repeat("x", 81))
	p.click(`#texts-form button[type="submit"]`)
	p.waitJS("the server's message", textOf("control-msg")+`.includes('displayName must be at most 80 characters')`)
	p.setField("display-input", "Winter sale")
	p.setField("description-input", "Boots and coats, while stocks last.")
	p.click(`#texts-form button[type="submit"]`)
	systemtest.WaitFor(t, "the name and description", func() bool {
		d := in.AdminRoom("default")
		return d.Str("displayName") == "Winter sale" && d.Str("description") == "Boots and coats, while stocks last."
	})
	p.waitJS("the name shown", textOf("u-name")+` === 'Winter sale' && `+textOf("control-msg")+`.startsWith('Saved default: displayName = Winter sale')`)

	// Someone else, through the API of the same server.
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/default", systemtest.TestAdminToken, `{"targetActive":1}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	// The message cleared through the form.
	p.click("#message-clear")
	systemtest.WaitFor(t, "no message", func() bool { return in.AdminRoom("default").Str("message") == "" })
	p.waitJS("none shown", textOf("u-message")+` === 'none' && document.getElementById('message-input').value === ''`)

	// The audit log, newest first.
	rows := `[...document.querySelectorAll('#audit-table tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent))`
	p.waitJS("four changes", rows+`.length === 4`)
	got := eval[[][]string](p, rows)
	who := "token " + audit.Fingerprint(systemtest.TestAdminToken) + " from 127.0.0.1"
	want := []struct{ change string }{
		{`message: "The sale restarts at 10:30" → none`},
		{`targetActive: 0 → 1`},
		{`displayName: none → "Winter sale"description: none → "Boots and coats, while stocks last."`},
		{`message: none → "The sale restarts at 10:30"`},
	}
	for i, w := range want {
		r := got[i]
		if r[1] != who || r[2] != "PUT /admin/rooms/default" || r[3] != w.change || r[0] == "" {
			t.Errorf("audit row %d = %q, want who %q, what PUT /admin/rooms/default, change %q", i, r, who, w.change)
		}
	}
	// With a limit but nothing measured yet, the estimate is withheld and
	// none has been judged.
	p.waitJS("the ETA withheld while measuring", textOf("u-eta")+`.startsWith('none yet: measuring') && `+
		textOf("u-eta-error")+`.startsWith('none judged yet') && `+textOf("u-basis")+` === '—'`)
	p.shot("dashboard-operator")
}

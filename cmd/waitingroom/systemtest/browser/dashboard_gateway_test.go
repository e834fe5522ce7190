package browser

// End-to-end tests of the dashboard's Gateway panel in headless Chromium:
// hidden outside gateway mode, it shows a room's gateway settings in
// gateway mode and its forms change them through PUT /admin/rooms/{room};
// a value the server refuses shows the server's message and changes nothing.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// gatewaySettings is room's "gateway" object from GET /admin/rooms/{room}
// (nil when the document has none).
func gatewaySettings(t *testing.T, in *systemtest.Instance, room string) map[string]any {
	t.Helper()
	r := in.AdminRoom(room)
	if r.Status != 200 {
		t.Fatalf("GET /admin/rooms/%s: %d %s", room, r.Status, r.Raw)
	}
	g, _ := r.Body["gateway"].(map[string]any)
	return g
}

// protectedRoutes is the sorted "protect" list of a gateway object.
func protectedRoutes(g map[string]any) []string {
	var out []string
	list, _ := g["protect"].([]any)
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// shownRoutes is the sorted list of routes the panel shows.
func shownRoutes(p *page) []string {
	p.t.Helper()
	got := eval[[]string](p, `[...document.querySelectorAll('#g-protect li')].map((e) => e.textContent)`)
	slices.Sort(got)
	return got
}

// TestDashboardGatewayHidden: outside gateway mode the room document has
// no gateway object and the panel stays hidden.
func TestDashboardGatewayHidden(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	if g, ok := in.AdminRoom("default").Body["gateway"]; ok {
		t.Fatalf("an ordinary instance reports gateway settings: %v", g)
	}
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.waitJS("the default room", textOf("room-name")+` === 'default' && `+shown("controls"))
	if eval[bool](p, shown("gateway")) {
		t.Error("the Gateway panel is shown outside gateway mode")
	}
}

// TestDashboardGatewaySettings: in gateway mode the panel shows the room's
// defaults; its forms change the challenge, the pass and the routes (to
// none, and back to WR_PROTECT's); a bad difficulty shows the server's
// message and changes nothing.
func TestDashboardGatewaySettings(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	o := systemtest.StartOrigin(t)
	in := systemtest.GatewayInstance(t, o, nil)
	def := gatewaySettings(t, in, "sale")
	wrProtect := []string{"GET /checkout/*", "POST /checkout/*"}
	if def["challenge"] != "off" || def["pass"] != "once" || def["protectFrom"] != "WR_PROTECT" || !slices.Equal(protectedRoutes(def), wrProtect) {
		t.Fatalf("defaults: %v", def)
	}
	p := openDashboard(t, b, in, in.Admin)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	p.setField("room-select", "sale")
	p.waitJS("the sale room's gateway panel", textOf("room-name")+` === 'sale' && `+shown("gateway")+` && `+
		shown("challenge-form")+` && `+shown("pass-form")+` && `+shown("protect-form"))

	// The defaults, as shown and in the forms.
	want := map[string]string{
		"g-challenge": "off", "g-difficulty": fmt.Sprintf("%v bits", def["difficulty"]), "g-pass": "once",
		"g-protect-from": "WR_PROTECT (the server's)",
	}
	for id, w := range want {
		if got := p.text(id); got != w {
			t.Errorf("#%s = %q, want %q", id, got, w)
		}
	}
	if got := p.text("g-session-ttl"); !strings.HasPrefix(got, "10m (600 s)") {
		t.Errorf("session idle time = %q, want 10m (600 s)", got)
	}
	if got := p.text("g-session-max"); !strings.HasPrefix(got, "1h (") {
		t.Errorf("session at most = %q, want 1h (3600 s)", got)
	}
	if got := shownRoutes(p); !slices.Equal(got, wrProtect) {
		t.Errorf("routes shown = %v, want %v", got, wrProtect)
	}
	values := eval[[]string](p, `['challenge-input', 'difficulty-input', 'pass-input', 'session-ttl-input', 'session-max-input']
		.map((id) => document.getElementById(id).value)`)
	if w := []string{"off", fmt.Sprint(def["difficulty"]), "once", "10m", "1h"}; !slices.Equal(values, w) {
		t.Errorf("form values = %v, want %v", values, w)
	}

	// Challenge pow, difficulty 10.
	p.setField("challenge-input", "pow")
	p.setField("difficulty-input", "10")
	p.click(`#challenge-form button[type="submit"]`)
	systemtest.WaitFor(t, "challenge pow, difficulty 10", func() bool {
		g := gatewaySettings(t, in, "sale")
		return g["challenge"] == "pow" && g["difficulty"] == float64(10)
	})
	p.waitJS("the challenge saved", textOf("gateway-msg")+` === 'Saved sale: challenge = pow, difficulty = 10.' && `+
		textOf("g-challenge")+` === 'pow (proof of work)' && `+textOf("g-difficulty")+` === '10 bits'`)

	// A difficulty the server refuses: its message, nothing changed.
	p.setField("difficulty-input", "40")
	p.click(`#challenge-form button[type="submit"]`)
	p.waitJS("the server's message", `document.getElementById('gateway-msg').classList.contains('error') && `+
		textOf("gateway-msg")+`.includes('difficulty must be 1 to 32') && `+textOf("gateway-msg")+`.endsWith('(400).')`)
	if g := gatewaySettings(t, in, "sale"); g["challenge"] != "pow" || g["difficulty"] != float64(10) {
		t.Errorf("a refused difficulty changed the settings: %v", g)
	}
	if got := p.text("g-difficulty"); got != "10 bits" {
		t.Errorf("difficulty shown after a refusal = %q, want 10 bits", got)
	}
	if got := p.text("control-msg"); got != "" {
		t.Errorf("the gateway's message went to the room controls: %q", got)
	}

	// Pass session: a duration and a number of seconds.
	p.setField("pass-input", "session")
	p.setField("session-ttl-input", "2m")
	p.setField("session-max-input", "1800")
	p.click(`#pass-form button[type="submit"]`)
	systemtest.WaitFor(t, "pass session, 2m, 30m", func() bool {
		g := gatewaySettings(t, in, "sale")
		return g["pass"] == "session" && g["sessionTtlSeconds"] == float64(120) && g["sessionMaxTtlSeconds"] == float64(1800)
	})
	p.waitJS("the pass saved", textOf("gateway-msg")+` === 'Saved sale: pass = session, sessionTtl = 2m, sessionMaxTtl = 1800.' && `+
		textOf("g-session-ttl")+` === '2m (120 s)' && `+textOf("g-pass")+` === 'session'`)

	// The room's own routes, one a line.
	own := []string{"GET /cart/*", "POST /api/orders"}
	p.setField("protect-input", "POST /api/orders\n\n  GET /cart/*  \n")
	p.click(`#protect-form button[type="submit"]`)
	systemtest.WaitFor(t, "the room's own routes", func() bool {
		g := gatewaySettings(t, in, "sale")
		return g["protectFrom"] == "room" && slices.Equal(protectedRoutes(g), own)
	})
	p.waitJS("the routes shown", textOf("g-protect-from")+` === "this room's own" && document.querySelectorAll('#g-protect li').length === 2`)
	if got := shownRoutes(p); !slices.Equal(got, own) {
		t.Errorf("routes shown = %v, want %v", got, own)
	}

	// An empty list: nothing protected in this room.
	p.setField("protect-input", "")
	p.click(`#protect-form button[type="submit"]`)
	systemtest.WaitFor(t, "no routes", func() bool {
		g := gatewaySettings(t, in, "sale")
		return g["protectFrom"] == "room" && len(protectedRoutes(g)) == 0
	})
	p.waitJS("none shown", textOf("g-protect")+` === 'none' && `+textOf("gateway-msg")+` === 'Saved sale: protect = none.'`)

	// Back to WR_PROTECT's.
	p.click("#protect-reset")
	systemtest.WaitFor(t, "WR_PROTECT's routes", func() bool {
		g := gatewaySettings(t, in, "sale")
		return g["protectFrom"] == "WR_PROTECT" && slices.Equal(protectedRoutes(g), wrProtect)
	})
	p.waitJS("WR_PROTECT's routes shown", textOf("g-protect-from")+` === "WR_PROTECT (the server's)" && `+
		`document.getElementById('protect-input').value.split('\n').sort().join(',') === 'GET /checkout/*,POST /checkout/*'`)
	p.shot("dashboard-gateway")
}

package attack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fasthttp/websocket"

	"waitingroom/loadtest/internal/client"
	"waitingroom/loadtest/internal/measure"
	"waitingroom/loadtest/internal/stream"
)

// crossSiteResult is what the cross-site requests achieved.
type crossSiteResult struct {
	Attempts     int             `json:"attempts"` // of each kind
	Cookie       string          `json:"cookie"`
	Leave        measure.Summary `json:"leaveAnswers"`     // form POST leave, cookie only
	WS           measure.Summary `json:"websocketAnswers"` // handshake; 101: upgraded
	WSLeaked     int             `json:"websocketFramesWithEntryToken"`
	WSFirstFrame int             `json:"websocketFirstFrames"`
	// PlaceKept: the victim's position afterwards (with its Bearer token):
	// 200 means the place survived; 404 that a forged leave took it.
	PlaceCode    int    `json:"victimPositionStatus"`
	EnterFailure string `json:"enterFailure,omitempty"`
	qtok         string // the victim's queue token
}

// crossSite makes a victim enter, then sends n WebSocket handshakes and n
// form POSTs to leave as a foreign page would make the victim's browser
// send them: the victim's cookie, Origin https://evil.example,
// Sec-Fetch-Site: cross-site, no Authorization.
func (a *attacker) crossSite(ctx context.Context, access string, n int) *crossSiteResult {
	res := &crossSiteResult{Attempts: n}
	cl := a.client(crossSiteAddr, 2)
	defer cl.HTTP.CloseIdleConnections()
	qtok, cookie, err := a.enter(ctx, cl, access)
	if err != nil {
		res.EnterFailure = stream.WhyEnded(err)
		return res
	}
	res.Cookie, res.qtok = cookie, qtok
	u, _ := url.Parse(a.base)
	wsURL := *u
	wsURL.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	wsURL.Path = cl.RoomPath("ws")
	dial := client.DialFrom(crossSiteAddr)
	wd := &websocket.Dialer{NetDialContext: dial, HandshakeTimeout: a.timeout, ReadBufferSize: stream.BufSize, WriteBufferSize: 1 << 10}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		h := http.Header{}
		h.Set("Origin", evilOrigin)
		h.Set("Cookie", cookie+"="+qtok)
		start := time.Now()
		wc, resp, err := wd.DialContext(ctx, wsURL.String(), h)
		switch {
		case err == nil:
			a.rec.Record("csrf-ws", http.StatusSwitchingProtocols, time.Since(start))
			_ = wc.SetReadDeadline(time.Now().Add(a.timeout))
			if _, data, err := wc.ReadMessage(); err == nil {
				res.WSFirstFrame++
				var st stream.Status
				if json.Unmarshal(data, &st) == nil && st.EntryToken != "" {
					res.WSLeaked++
				}
			}
			wc.Close()
		case resp != nil:
			a.rec.Record("csrf-ws", resp.StatusCode, time.Since(start))
		case ctx.Err() == nil:
			a.rec.Record("csrf-ws", measure.NoResponse, time.Since(start))
		}
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+cl.RoomPath("leave"), strings.NewReader("confirm=1"))
		if err != nil {
			break
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie+"="+qtok)
		req.Header.Set("Origin", evilOrigin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		a.send(cl, "csrf-leave", req)
	}
	res.WS, res.Leave = a.rec.Summary("csrf-ws"), a.rec.Summary("csrf-leave")
	res.PlaceCode, _ = cl.Call(context.WithoutCancel(ctx), "victim-position", http.MethodGet, cl.RoomPath("position"), qtok, nil, nil)
	return res
}

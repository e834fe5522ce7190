package push

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
)

// FuzzHandshakeJudged: every request the WebSocket handshake accepts is
// one the cross-site gate sees as an upgrade (api.WantsUpgrade), so none
// reaches a stream with its origin unjudged, however its Connection and
// Upgrade headers are spelt, repeated or folded.
func FuzzHandshakeJudged(f *testing.F) {
	const key = "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, h := range []string{
		"Connection: Upgrade\r\nUpgrade: websocket\r\n",
		"Connection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n",
		"Connection: keep-alive\r\nConnection: upgrade\r\nUpgrade: websocket\r\n",
		"connection: foo,upgrade\r\nupgrade:  websocket \r\n",
		"Connection: Upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n",
		"Connection:\tUpgrade\r\nUpgrade:websocket\r\n",
	} {
		f.Add([]byte(h + key))
	}
	app := fiber.New()
	f.Fuzz(func(t *testing.T, headers []byte) {
		raw := append([]byte("GET /api/v1/rooms/r/ws HTTP/1.1\r\nHost: x\r\n"), headers...)
		raw = append(raw, "\r\n"...)
		rc := &fasthttp.RequestCtx{}
		if err := rc.Request.Read(bufio.NewReader(bytes.NewReader(raw))); err != nil {
			return // refused before any handler
		}
		c := app.AcquireCtx(rc)
		defer app.ReleaseCtx(c)
		if _, err := wsHandshake(c); err == nil && !api.WantsUpgrade(c) {
			t.Fatalf("the handshake accepts %q, which the cross-site gate does not see as an upgrade", headers)
		}
	})
}

package api

import (
	"bufio"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

func TestWantsUpgrade(t *testing.T) {
	app := fiber.New()
	for _, c := range []struct {
		headers [][2]string
		want    bool
	}{
		{nil, false},
		{[][2]string{{"Connection", "keep-alive"}}, false},
		{[][2]string{{"Connection", "Upgrade"}, {"Upgrade", "websocket"}}, true},
		{[][2]string{{"Upgrade", "h2c"}}, true},
		{[][2]string{{"Upgrade", ""}}, true},
		{[][2]string{{"connection", "foo bar, UPGRADE"}}, true}, // not a token list a strict parser accepts
		{[][2]string{{"Connection", "keep-alive"}, {"Connection", "upgrade"}}, true},
		{[][2]string{{"Connection", "upgrade"}, {"Connection", "keep-alive"}}, true},
		{[][2]string{{"X-Upgrade", "websocket"}}, false},
	} {
		// Parsed from the wire, as a request arrives: fasthttp keeps some
		// headers (Connection) apart from the others.
		raw := "GET /api/v1/rooms/r/ws HTTP/1.1\r\nHost: x\r\n"
		for _, h := range c.headers {
			raw += h[0] + ": " + h[1] + "\r\n"
		}
		rc := &fasthttp.RequestCtx{}
		if err := rc.Request.Read(bufio.NewReader(strings.NewReader(raw + "\r\n"))); err != nil {
			t.Fatal(err)
		}
		ctx := app.AcquireCtx(rc)
		if got := WantsUpgrade(ctx); got != c.want {
			t.Errorf("%v: WantsUpgrade = %v, want %v", c.headers, got, c.want)
		}
		app.ReleaseCtx(ctx)
	}
}

package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
	"waitingroom/server/listener"
	"waitingroom/server/openapi"
	"waitingroom/server/page"
	"waitingroom/server/roominfo"
)

func (s *Server) newPublicApp() *fiber.App {
	bodyLimit := s.cfg.BodyLimit
	if s.gw != nil {
		// The origin's bodies are larger; the waiting room's own are
		// checked against Config.BodyLimit by the dispatch (gatewaymode.go).
		bodyLimit = max(bodyLimit, s.gw.BodyLimit())
	}
	cfg := api.FiberConfig("waitingroom", bodyLimit, s.log, errorTable)
	// Gateway mode streams request bodies (gatewaymode.go): a body for
	// the origin is never held whole, one refused is never read.
	cfg.StreamRequestBody = s.gw != nil && !s.gw.ForwardAuth()
	app := fiber.New(cfg)
	s.guardPublic(app) // first: nothing in Fiber runs before it
	app.Use(api.RequestContext, s.observe, api.SecurityHeaders)

	describe := api.Document(openapi.PublicAt(s.prefix))
	v1 := app.Group(s.prefix+"/api/v1", api.NoStore, s.denyIPs, s.apiGate)
	if len(s.cfg.CORSOrigins) > 0 {
		v1.Use(cors.New(cors.Config{
			AllowOrigins:     strings.Join(s.cfg.CORSOrigins, ","),
			AllowCredentials: true,
			AllowHeaders:     "Authorization, Content-Type, X-Entry-Token",
			AllowMethods:     "GET, POST",
			MaxAge:           600,
		}))
	}
	v1.Post("/auth/login", s.login)
	v1.Get("/rooms/:room", roominfo.Handler(s.q))
	v1.Post("/rooms/:room/enter", s.enter)
	v1.Get("/rooms/:room/position", s.position)
	v1.Post("/rooms/:room/leave", s.leave)
	v1.Get("/rooms/:room/events", s.streams.Events)
	v1.Get("/rooms/:room/ws", s.streams.WebSocket)
	v1.Post("/orders", s.order)
	v1.Get("/orders", s.orders)
	v1.Get("/products/:id", s.product)
	v1.Get("/openapi.json", describe)
	if s.gw != nil {
		v1.Get("/rooms/:room/challenge", s.challenge)
		app.Get(s.prefix+"/.well-known/jwks.json", s.jwks)
	}

	page.Mount(app, s.prefix)
	return app
}

// markServed is the public app's outermost handler step: the connection
// of every request that reached it is past its first-request deadline
// (listener.MarkServed). It sits here, not in the listener package, because
// it is a fasthttp handler: the listener stays free of HTTP.
func markServed(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		listener.MarkServed(ctx.Conn())
		next(ctx)
	}
}

// observe records every request's duration by route pattern and status.
// It resolves errors itself so the recorded status is the one sent.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	route := api.RouteName(c, err) // "unmatched": one label for every unknown path
	if err != nil {
		if werr := errorTable.Write(c, s.log, err); werr != nil {
			return werr
		}
	}
	s.m.HTTPDuration.WithLabelValues(route, strconv.Itoa(c.Response().StatusCode())).Observe(time.Since(start).Seconds())
	return nil
}

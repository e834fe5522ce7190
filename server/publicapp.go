package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/valyala/fasthttp"

	"waitingroom/server/api"
	"waitingroom/server/listener"
	"waitingroom/server/openapi"
	"waitingroom/web"
)

func (s *Server) newPublicApp() *fiber.App {
	bodyLimit := s.cfg.BodyLimit
	if s.gw != nil {
		// The origin's bodies are larger; the waiting room's own are
		// checked against WR_BODY_LIMIT by the dispatch (guardProtocol).
		bodyLimit = max(bodyLimit, s.cfg.OriginBodyLimit)
	}
	cfg := api.FiberConfig("waitingroom", bodyLimit, s.log)
	// Gateway mode streams request bodies (protocolfilter.go): a body for
	// the origin is never held whole, one refused is never read.
	cfg.StreamRequestBody = s.gw != nil
	app := fiber.New(cfg)
	s.guardPublic(app) // first: nothing in Fiber runs before it
	app.Use(api.RequestContext, s.observe, api.SecurityHeaders)

	describe := api.Document(publicDescription(s.prefix))
	api := app.Group(s.prefix+"/api/v1", api.NoStore, s.denyIPs, s.apiGate)
	if len(s.cfg.CORSOrigins) > 0 {
		api.Use(cors.New(cors.Config{
			AllowOrigins:     strings.Join(s.cfg.CORSOrigins, ","),
			AllowCredentials: true,
			AllowHeaders:     "Authorization, Content-Type, X-Entry-Token",
			AllowMethods:     "GET, POST",
			MaxAge:           600,
		}))
	}
	api.Post("/auth/login", s.login)
	api.Get("/rooms/:room", s.roomInfo())
	api.Post("/rooms/:room/enter", s.enter)
	api.Get("/rooms/:room/position", s.position)
	api.Post("/rooms/:room/leave", s.leave)
	api.Get("/rooms/:room/events", s.events)
	api.Get("/rooms/:room/ws", s.wsUpgrade, websocket.New(s.ws))
	api.Post("/orders", s.order)
	api.Get("/orders", s.orders)
	api.Get("/products/:id", s.product)
	api.Get("/openapi.json", describe)
	if s.gw != nil {
		api.Get("/rooms/:room/challenge", s.challenge)
		app.Get(s.prefix+"/.well-known/jwks.json", s.jwks)
	}

	s.mountPage(app)
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
		if werr := api.Write(c, s.log, err); werr != nil {
			return werr
		}
	}
	s.m.HTTPDuration.WithLabelValues(route, strconv.Itoa(c.Response().StatusCode())).Observe(time.Since(start).Seconds())
	return nil
}

// mountPage serves the waiting-room page at / and /rooms/{room}, and its
// assets under /static/ — all under /_wr in gateway mode, where the page
// is told so (data-base and data-gateway on its root element).
func (s *Server) mountPage(app *fiber.App) {
	files := api.LoadStatic(web.FS())
	index, ok := files["index.html"]
	if !ok {
		panic("server: web.FS has no index.html")
	}
	if s.gw != nil {
		index.Body = gatewayPage(index.Body, s.prefix)
	}
	page := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, api.PageCSP)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return c.Send(index.Body)
	}
	app.Get(s.prefix+"/", page)
	app.Get(s.prefix+"/rooms/:room", page)
	app.Get(s.prefix+"/static/*", func(c *fiber.Ctx) error {
		name := c.Params("*")
		f, ok := files[name]
		if !ok || strings.Contains(name, "..") {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentSecurityPolicy, api.PageCSP)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		c.Set(fiber.HeaderContentType, f.ContentType)
		return c.Send(f.Body)
	})
}

// gatewayPage is the page for gateway mode: its assets under prefix, and
// its root element saying where the API is and that visitors are
// anonymous.
func gatewayPage(body []byte, prefix string) []byte {
	r := strings.NewReplacer(`href="/static/`, `href="`+prefix+`/static/`, `src="/static/`, `src="`+prefix+`/static/`,
		`<html lang="en">`, `<html lang="en" data-base="`+prefix+`" data-gateway="1">`)
	return []byte(r.Replace(string(body)))
}

// publicDescription is the public API's OpenAPI description as this
// instance serves it: its server URL is the prefix the API lives under
// ("/", or gateway.Prefix in gateway mode).
func publicDescription(prefix string) []byte {
	if prefix == "" {
		return openapi.Public
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(openapi.Public, &doc); err != nil {
		panic("server: openapi.Public: " + err.Error())
	}
	doc["servers"], _ = json.Marshal([]map[string]string{{"url": prefix,
		"description": "Gateway mode: the waiting room's own API under " + prefix + "; every other path is the origin's."}})
	b, _ := json.Marshal(doc)
	return b
}

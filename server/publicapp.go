package server

import (
	"errors"
	"io/fs"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/valyala/fasthttp"

	"waitingroom/server/listener"
	"waitingroom/web"
)

// pageCSP allows only the page's own files: no inline script or style.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// readBufferSize caps the request line and headers together; a larger
// request gets 431 headers_too_large. 16 KiB: a busy shop domain's cookies
// alone can pass 4 KiB, and common proxies in front pass 8 KiB per header
// line or more; see fiberConfig for what it costs per connection.
const readBufferSize = 16 << 10

// fiberConfig is both apps' configuration.
//
// ReduceMemoryUsage returns a connection's read and write buffers to
// fasthttp's pools whenever nothing is buffered: an idle keep-alive
// connection holds none, and neither does a stream (SSE and WebSocket
// hijack the connection; without it fasthttp hands the stream its read
// buffer, readBufferSize per stream for hours). The cost is a pool get/put
// per request.
//
// Multipart forms are never pre-parsed: no endpoint takes one.
func (s *Server) fiberConfig(name string) fiber.Config {
	return fiber.Config{
		AppName:                      name,
		DisableStartupMessage:        true,
		BodyLimit:                    s.cfg.BodyLimit,
		ReadTimeout:                  10 * time.Second, // slow clients cannot hold a connection while sending
		IdleTimeout:                  90 * time.Second,
		ReadBufferSize:               readBufferSize,
		ReduceMemoryUsage:            true,
		DisablePreParseMultipartForm: true,
		ErrorHandler:                 s.writeError,
	}
}

func (s *Server) newPublicApp() *fiber.App {
	app := fiber.New(s.fiberConfig("waitingroom"))
	s.guardProtocol(app) // first: nothing in Fiber runs before it
	app.Use(s.observe, securityHeaders)

	api := app.Group("/api/v1", noStore, s.denyIPs, s.apiGate)
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
	api.Post("/rooms/:room/enter", s.enter)
	api.Get("/rooms/:room/position", s.position)
	api.Post("/rooms/:room/leave", s.leave)
	api.Get("/rooms/:room/events", s.events)
	api.Get("/rooms/:room/ws", s.wsUpgrade, websocket.New(s.ws))
	api.Post("/orders", s.order)
	api.Get("/products/:id", s.product)

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
	route := ""
	if err := c.Next(); err != nil {
		var fe *fiber.Error
		if errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed) {
			route = "unmatched" // one label for every unknown path
		}
		if werr := s.writeError(c, err); werr != nil {
			return werr
		}
	}
	if route == "" {
		route = c.Route().Path
	}
	s.m.httpDuration.WithLabelValues(route, strconv.Itoa(c.Response().StatusCode())).Observe(time.Since(start).Seconds())
	return nil
}

func securityHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("X-Frame-Options", "DENY")
	return c.Next()
}

func noStore(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Next()
}

// staticFile is one embedded file, served from memory.
type staticFile struct {
	body        []byte
	contentType string
}

// loadStatic reads every file of fsys (embedded: it cannot fail) with its
// content type.
func loadStatic(fsys fs.FS) map[string]staticFile {
	files := map[string]staticFile{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[p] = staticFile{body: b, contentType: ct}
		return nil
	})
	if err != nil {
		panic("server: reading the embedded files: " + err.Error())
	}
	return files
}

// mountPage serves the waiting-room page at / and /rooms/{room}, and its
// assets under /static/.
func (s *Server) mountPage(app *fiber.App) {
	files := loadStatic(web.FS())
	index, ok := files["index.html"]
	if !ok {
		panic("server: web.FS has no index.html")
	}
	page := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return c.Send(index.body)
	}
	app.Get("/", page)
	app.Get("/rooms/:room", page)
	app.Get("/static/*", func(c *fiber.Ctx) error {
		name := c.Params("*")
		f, ok := files[name]
		if !ok || strings.Contains(name, "..") {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		c.Set(fiber.HeaderContentType, f.contentType)
		return c.Send(f.body)
	})
}

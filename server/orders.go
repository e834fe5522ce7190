package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"waitingroom/queue"
	"waitingroom/server/api"
	"waitingroom/server/checkout"
	"waitingroom/server/pgstore"
	"waitingroom/server/ratelimit"
)

type orderRequest struct {
	ProductID *int64 `json:"productId"`
	Quantity  *int64 `json:"quantity"`
}

// order places an order with a one-time entry token: the use case is
// checkout.Place (limits, product check, consume, place, release or
// restore); this handler decodes, validates, calls it and maps the result.
func (s *Server) order(c *fiber.Ctx) error {
	if s.checkout == nil {
		return errNoDatabase
	}
	claims, err := s.queueClaims(c, "")
	if err != nil {
		return err
	}
	var req orderRequest
	if err := api.Decode(c, &req); err != nil {
		return err
	}
	if req.ProductID == nil || *req.ProductID <= 0 {
		return api.BadRequest("productId must be a positive integer")
	}
	if req.Quantity == nil || *req.Quantity < 1 || *req.Quantity > int64(s.cfg.MaxQuantity) {
		return api.BadRequest("quantity must be an integer from 1 to " + strconv.Itoa(s.cfg.MaxQuantity))
	}
	res, err := s.checkout.Place(c.UserContext(), checkout.Request{
		Room: claims.Room, User: claims.Subject, EntryToken: c.Get("X-Entry-Token"),
		ProductID: *req.ProductID, Quantity: int(*req.Quantity),
		// The last line: a room-wide ceiling that holds even if the queue
		// is bypassed by a bug, then a per-user one.
		Limits: func(context.Context) error {
			return s.rl.All(c, claims.Subject, false,
				ratelimit.Check{Name: "order_room", Subject: claims.Room, Limit: s.cfg.Limits.OrderRoom},
				ratelimit.Check{Name: "order_user", Subject: claims.Subject, Limit: s.cfg.Limits.OrderUser})
		},
	})
	if res.Outcome != "" {
		s.m.Orders.WithLabelValues(string(res.Outcome)).Inc()
	}
	if err != nil {
		return checkoutError(err)
	}
	return c.Status(fiber.StatusCreated).JSON(toOrderDoc(res.Order))
}

// orderDoc is an order as the API shows it; prices are in cents, as a
// product's.
type orderDoc struct {
	OrderID     int64     `json:"orderId"`
	ProductID   int64     `json:"productId"`
	ProductName string    `json:"productName"`
	Quantity    int       `json:"quantity"`
	UnitPrice   int64     `json:"unitPrice"`
	Total       int64     `json:"total"`
	Status      string    `json:"status"`
	PlacedAt    time.Time `json:"placedAt"`
}

func toOrderDoc(o pgstore.Order) orderDoc {
	return orderDoc{OrderID: o.ID, ProductID: o.ProductID, ProductName: o.ProductName, Quantity: o.Quantity,
		UnitPrice: o.UnitPrice, Total: o.Total(), Status: "PLACED", PlacedAt: o.CreatedAt.UTC()}
}

// orders answers GET /api/v1/orders?room=: the caller's own orders in the
// room (access token), newest first, at most checkout.MaxOrdersRead — so a
// page can show an order's result after a reload.
func (s *Server) orders(c *fiber.Ctx) error {
	if s.checkout == nil {
		return errNoDatabase
	}
	claims, err := s.accessClaims(c)
	if err != nil {
		return err
	}
	room := strings.Clone(c.Query("room"))
	if !queue.ValidRoom(room) {
		return api.BadRequest("room must be given: 1-64 of a-z 0-9 - _")
	}
	// Each read is a query on the database the queue protects: fail closed.
	if err := s.rl.One(c, "orders_read", claims.Subject, claims.Subject, s.cfg.Limits.OrdersRead, false); err != nil {
		return err
	}
	list, err := s.checkout.Orders(c.UserContext(), claims.Subject, room)
	if err != nil {
		return storeError(err)
	}
	docs := make([]orderDoc, len(list))
	for i, o := range list {
		docs[i] = toOrderDoc(o)
	}
	return c.JSON(fiber.Map{"orders": docs})
}

// product returns one product.
func (s *Server) product(c *fiber.Ctx) error {
	if s.checkout == nil {
		return errNoDatabase
	}
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return api.BadRequest("the product id must be a positive integer")
	}
	p, err := s.checkout.Product(c.UserContext(), id)
	if err != nil {
		return storeError(err)
	}
	return c.JSON(p)
}

package server

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/checkout"
)

type orderRequest struct {
	ProductID *int64 `json:"productId"`
	Quantity  *int64 `json:"quantity"`
}

// order places an order with a one-time entry token: the use case is
// checkout.Place (limits, product check, consume, place, release or
// restore); this handler decodes, validates, calls it and maps the result.
func (s *Server) order(c *fiber.Ctx) error {
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
			if err := s.limit(c, "order_room", claims.Room, claims.Subject, s.cfg.Limits.OrderRoom, false); err != nil {
				return err
			}
			return s.limit(c, "order_user", claims.Subject, claims.Subject, s.cfg.Limits.OrderUser, false)
		},
	})
	if res.Outcome != "" {
		s.m.orders.WithLabelValues(string(res.Outcome)).Inc()
	}
	if err != nil {
		return checkoutError(err)
	}
	o := res.Order
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"orderId": o.ID, "productId": o.ProductID, "quantity": o.Quantity, "status": "PLACED",
	})
}

// product returns one product.
func (s *Server) product(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return api.BadRequest("the product id must be a positive integer")
	}
	p, err := s.checkout.Product(c.UserContext(), id)
	if err != nil {
		return api.StoreError(err)
	}
	return c.JSON(p)
}

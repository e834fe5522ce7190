package server

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"waitingroom/server/api"
	"waitingroom/server/checkout"
)

// The public app's own refusals; package api maps the packages' sentinel
// errors and writes every error in the contract's form.
var (
	errInvalidCreds = &api.Error{Status: fiber.StatusUnauthorized, Code: "invalid_credentials", Message: "login id or password is wrong"}
	errWrongRoom    = &api.Error{Status: fiber.StatusForbidden, Code: "wrong_room", Message: "this queue token belongs to another room"}
)

// checkoutError is the answer to checkout.Place's errors that carry a
// message of their own: a business refusal names its reason, a store error
// is answered by its kind (api.StoreError); the others are the table's.
func checkoutError(err error) error {
	var re *checkout.RefusedError
	var se *checkout.StoreError
	switch {
	case errors.As(err, &re):
		return api.BadRequest("the order was refused: " + re.Err.Error())
	case errors.As(err, &se):
		return api.StoreError(se.Err)
	}
	return err
}

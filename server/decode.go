package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gofiber/fiber/v2"
)

// decodeJSON reads the request body as one JSON object into v. Malformed
// JSON, a wrong type or trailing data is a 400 that says what is wrong.
func decodeJSON(c *fiber.Ctx, v any) error { return decodeBody(c.Body(), v) }

// decodeBody is decodeJSON on a body.
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errBadRequest("a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field != "" {
				return errBadRequest(fmt.Sprintf("%s must be a %s", te.Field, te.Type))
			}
			return errBadRequest("the body must be a JSON object")
		}
		return errBadRequest("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errBadRequest("unexpected data after the JSON object")
	}
	return nil
}

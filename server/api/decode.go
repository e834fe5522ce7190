package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Decode reads the request body as one JSON object into v, ignoring unknown
// fields; DecodeStrict refuses them. Malformed
// JSON, a wrong type or trailing data is a 400 that says what is wrong.
//
// The body is read raw: never inflated, whatever Content-Encoding says
// (the protocol filter refuses such requests before any handler; this is the
// second lock).
//
// Unknown fields: bodies sent to the management app are decoded strictly,
// an unknown field is a 400 naming it (an operator's typo such as
// "targetActiv" must never be a silent no-op). Public bodies (login, order)
// ignore unknown fields: a page or client newer than this instance, during
// a rolling deploy, must not be refused, and every field they need is
// checked for presence and range by its handler.
func Decode(c *fiber.Ctx, v any) error { return DecodeBody(c.Request().Body(), v) }

// DecodeStrict is Decode for the management app: unknown fields are refused.
func DecodeStrict(c *fiber.Ctx, v any) error { return decode(c.Request().Body(), v, true) }

// DecodeBody is Decode on a body already read.
func DecodeBody(body []byte, v any) error { return decode(body, v, false) }

// maxFieldEcho bounds an unknown field's name in the message.
const maxFieldEcho = 64

func decode(body []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("a JSON body is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field != "" {
				return BadRequest(fmt.Sprintf("%s must be %s", te.Field, jsonKind(te.Type)))
			}
			return BadRequest("the body must be a JSON object")
		}
		// encoding/json has no typed error for an unknown field.
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && strict {
			if len(name) > maxFieldEcho {
				return BadRequest("unknown field (its name is too long to show)")
			}
			return BadRequest("unknown field " + name)
		}
		return BadRequest("malformed JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("unexpected data after the JSON object")
	}
	return nil
}

// jsonKind says in words what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value of another type"
}

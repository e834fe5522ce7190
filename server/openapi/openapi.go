// Package openapi holds the OpenAPI 3.1 descriptions of the two ports:
// Public (the public API, served at GET /api/v1/openapi.json) and Admin
// (the management port, served at GET /admin/openapi.json). They are
// maintained by hand beside the handlers they describe; the system test
// (cmd/waitingroom/openapi_test.go) drives every route of a running server,
// validates each answer against them, and fails when a route and the
// description disagree.
//
// Public's paths start at the public port's root; in gateway mode the
// server serves it with its server URL under /_wr (operations marked
// "x-gateway-mode": "only" exist in gateway mode alone).
package openapi

import (
	_ "embed"
	"encoding/json"
)

// Public is the public API's description (JSON).
//
//go:embed public.json
var Public []byte

// Admin is the management port's description (JSON).
//
//go:embed admin.json
var Admin []byte

// PublicAt is Public as an instance serves it: its server URL is the
// prefix the API lives under ("" for "/", or gateway.Prefix in gateway
// mode).
func PublicAt(prefix string) []byte {
	if prefix == "" {
		return Public
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(Public, &doc); err != nil {
		panic("openapi: Public: " + err.Error())
	}
	doc["servers"], _ = json.Marshal([]map[string]string{{"url": prefix,
		"description": "Gateway mode: the waiting room's own API under " + prefix + "; every other path is the origin's."}})
	b, _ := json.Marshal(doc)
	return b
}

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

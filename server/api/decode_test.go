package api

import (
	"strings"
	"testing"
)

// TestDecodeNamesJSONKinds: every Go type a body field may have is named
// as the JSON kind a client must send.
func TestDecodeNamesJSONKinds(t *testing.T) {
	var v struct {
		I  int64             `json:"i"`
		U  uint8             `json:"u"`
		F  float64           `json:"f"`
		S  string            `json:"s"`
		B  *bool             `json:"b"`
		A  []string          `json:"a"`
		O  struct{ X int }   `json:"o"`
		M  map[string]string `json:"m"`
		PI *int              `json:"pi"`
	}
	for body, want := range map[string]string{
		`{"i":"1"}`: "i must be an integer", `{"u":true}`: "u must be an integer", `{"pi":1.5}`: "pi must be an integer",
		`{"f":"1"}`: "f must be a number", `{"s":1}`: "s must be a string", `{"b":0}`: "b must be true or false",
		`{"a":{}}`: "a must be an array", `{"o":[]}`: "o must be an object", `{"m":3}`: "m must be an object",
	} {
		err := DecodeBody([]byte(body), &v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

package server

import (
	"errors"
	"testing"

	"waitingroom/server/api"
)

// The fuzz targets' seed corpora run with every `go test`; run one with
// e.g. `go test -run '^$' -fuzz FuzzDecodeOrder ./server/`.

func FuzzDecodeOrder(f *testing.F) {
	for _, s := range []string{`{"productId":1,"quantity":2}`, `{"productId":1,`, `[]`, `null`, `{"quantity":1.5}`,
		`{"productId":99999999999999999999}`, `{} {}`, "", "\x00", `{"productId":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req orderRequest
		err := api.DecodeBody(body, &req)
		var ae *api.Error
		if err != nil && (!errors.As(err, &ae) || ae.Status != 400) {
			t.Fatalf("decode error %v is not a 400", err)
		}
	})
}

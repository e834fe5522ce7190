package server

import (
	"errors"
	"testing"
	"time"

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

func FuzzParseBands(f *testing.F) {
	for _, s := range []string{DefaultBands, "*:1s", "10:1s,*:2s", "", ",", "1:1s,1:1s,*:1s", "*:1s,*:1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBands(s)
		if err != nil {
			return
		}
		if len(b) == 0 || b[len(b)-1].Max != 0 {
			t.Fatalf("%q: the last band must be unbounded: %+v", s, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i-1].Max == 0 || (b[i].Max != 0 && b[i].Max <= b[i-1].Max) {
				t.Fatalf("%q: bands not ascending: %+v", s, b)
			}
		}
		for _, pos := range []int64{1, 100, 1 << 40} {
			if d := b.PollAfter(pos); d < 100*time.Millisecond || d > time.Hour {
				t.Fatalf("%q: PollAfter(%d) = %v", s, pos, d)
			}
		}
	})
}

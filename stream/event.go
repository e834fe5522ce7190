package stream

import (
	"encoding/json"
	"strconv"
	"time"
)

// event is what the queue's admit, leave, open and schedule scripts
// publish. Kind is "" (admission, departure), "open" (the pre-queue became
// the queue: fresh tickets above every earlier one) or "config" (method or
// opening time changed); the last two carry the room's new Sched.
type event struct {
	Kind     string   `json:"kind"`
	Sched    int64    `json:"sched"`
	Closed   *bool    `json:"closed"`
	Room     string   `json:"room"`
	Ev       int64    `json:"ev"`
	TS       int64    `json:"ts"` // Unix ms, Redis clock
	Serving  int64    `json:"serving"`
	Admitted []string `json:"admitted"`
	Left     []int64  `json:"left"`
	Waiting  int64    `json:"waiting"`
	Rate     string   `json:"rate"`
}

func decodeEvent(payload string) (*event, error) {
	var e event
	if err := json.Unmarshal([]byte(payload), &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func (e *event) time() time.Time { return time.UnixMilli(e.TS) }

func (e *event) rate() float64 {
	f, _ := strconv.ParseFloat(e.Rate, 64)
	return f
}

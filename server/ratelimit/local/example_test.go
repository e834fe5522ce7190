package local_test

import (
	"fmt"
	"time"

	"waitingroom/server/ratelimit"
	"waitingroom/server/ratelimit/local"
)

// A user polling a room whose band asks for a poll every second may poll
// once per 500 ms with a burst of 5: the sixth poll at once is refused,
// with the exact wait.
func ExampleLimiter_Allow() {
	now := time.Duration(0)
	l := local.New(local.Options{Now: func() time.Duration { return now }})
	pace := ratelimit.Limit{Rate: 1, Per: 500 * time.Millisecond, Burst: 5}
	for i := 1; i <= 6; i++ {
		r := l.Allow("default:42", pace)
		fmt.Println(i, r.Allowed, r.RetryAfter)
	}
	now += 500 * time.Millisecond
	fmt.Println("later", l.Allow("default:42", pace).Allowed)
	// Output:
	// 1 true 0s
	// 2 true 0s
	// 3 true 0s
	// 4 true 0s
	// 5 true 0s
	// 6 false 500ms
	// later true
}

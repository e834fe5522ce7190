package queuestatus

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultBands are the polling bands of the contract: positions 1–100 poll
// every second, up to 1000 every 3 s, beyond every 5 s.
const DefaultBands = "100:1s,1000:3s,*:5s"

// Band is one polling band: positions up to Max (0: no limit) poll Every.
type Band struct {
	Max   int64
	Every time.Duration
}

// Bands are polling bands in increasing Max, the last one unbounded.
type Bands []Band

// ParseBands parses "100:1s,1000:3s,*:5s": ascending positive limits, the
// last one "*", each interval between 100ms and 1h.
func ParseBands(s string) (Bands, error) {
	var out Bands
	parts := strings.Split(s, ",")
	for i, part := range parts {
		lim, every, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("band %q: want LIMIT:INTERVAL", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(every))
		if err != nil || d < 100*time.Millisecond || d > time.Hour {
			return nil, fmt.Errorf("band %q: interval must be a duration in [100ms, 1h]", part)
		}
		b := Band{Every: d}
		last := i == len(parts)-1
		switch lim = strings.TrimSpace(lim); {
		case lim == "*" && last:
		case lim == "*":
			return nil, errors.New("only the last band may be *")
		default:
			n, err := strconv.ParseInt(lim, 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("band %q: limit must be a positive integer or *", part)
			}
			if len(out) > 0 && n <= out[len(out)-1].Max {
				return nil, fmt.Errorf("band %q: limits must increase", part)
			}
			if last {
				return nil, errors.New("the last band must be *")
			}
			b.Max = n
		}
		out = append(out, b)
	}
	return out, nil
}

// Slowest returns the longest interval of the bands (a second when none).
func (bs Bands) Slowest() time.Duration {
	var d time.Duration
	for _, b := range bs {
		d = max(d, b.Every)
	}
	if d == 0 {
		return time.Second
	}
	return d
}

// PollAfter returns the polling interval for a 1-based position.
func (bs Bands) PollAfter(position int64) time.Duration {
	for _, b := range bs {
		if b.Max == 0 || position <= b.Max {
			return b.Every
		}
	}
	return time.Second
}

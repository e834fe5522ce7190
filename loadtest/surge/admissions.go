package surge

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// ticketOf reads the "seq" claim (the ticket number) from a queue token's
// payload without verifying the signature: the tool only compares tickets,
// it trusts the server it measures.
func ticketOf(queueToken string) (int64, error) {
	parts := strings.Split(queueToken, ".")
	if len(parts) != 3 {
		return 0, errors.New("queue token: not a JWT (want header.payload.signature)")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return 0, errors.New("queue token: payload is not base64url")
	}
	var c struct {
		Seq *int64 `json:"seq"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return 0, errors.New("queue token: payload is not JSON")
	}
	if c.Seq == nil || *c.Seq < 1 {
		return 0, errors.New("queue token: no seq claim")
	}
	return *c.Seq, nil
}

// admission is one admitted user: its ticket and when it was admitted
// (entryExpiresAt − entryTtl, Redis's clock; users admitted by the same
// tick share the time).
type admission struct {
	ticket int64
	at     time.Time
}

// fifoInversions counts the pairs a, b with a.ticket < b.ticket admitted
// strictly later than b: the admissions out of ticket order. Equal times
// (one tick) are not inversions. O(n log n): sort by ticket, then count
// the strictly decreasing pairs of times with a merge sort. adm is
// reordered.
func fifoInversions(adm []admission) int64 {
	slices.SortFunc(adm, func(a, b admission) int {
		switch {
		case a.ticket < b.ticket:
			return -1
		case a.ticket > b.ticket:
			return 1
		}
		return 0
	})
	ts := make([]int64, len(adm))
	for i, a := range adm {
		ts[i] = a.at.UnixNano()
	}
	return countInversions(ts, make([]int64, len(ts)))
}

// countInversions sorts a (using buf, as long as a) and returns the number
// of pairs i < j with a[i] > a[j].
func countInversions(a, buf []int64) int64 {
	if len(a) < 2 {
		return 0
	}
	mid := len(a) / 2
	n := countInversions(a[:mid], buf[:mid]) + countInversions(a[mid:], buf[mid:])
	i, j, k := 0, mid, 0
	for i < mid && j < len(a) {
		if a[i] <= a[j] { // equal: same tick, in order
			buf[k] = a[i]
			i++
		} else {
			buf[k] = a[j]
			j++
			n += int64(mid - i) // every remaining left value is later than a[j]
		}
		k++
	}
	k += copy(buf[k:], a[i:mid])
	copy(buf[k:], a[j:])
	copy(a, buf)
	return n
}

// etaFloor is the smallest real wait an ETA is judged against: the server
// rounds ETAs up to whole seconds, so a 0.2 s wait shown as "1 s" is not a
// 400 % miss.
const etaFloor = time.Second

// etaSample is the first estimate a user was shown — at entry, or, when
// the server withheld it then (a room that has just opened), the first
// status that carried one — and the wait that followed.
type etaSample struct {
	eta   time.Duration // the estimate
	real  time.Duration // admission − when it was shown
	after time.Duration // when it was shown − entry (0: at entry)
	at    time.Duration // when it was shown, after the run's start
	pos   int64         // the position shown with it
}

// FirstShown is one user's first estimate in the report's JSON (seconds
// after the run's start, and of wait): what the ETA accuracy's figures
// are computed from, for a reader who wants them by time or position.
type FirstShown struct {
	At       float64 `json:"at"`
	Position int64   `json:"position"`
	ETA      float64 `json:"eta"`
	Real     float64 `json:"real"`
}

// firstShown is the samples for the report's JSON.
func firstShown(s []etaSample) []FirstShown {
	out := make([]FirstShown, len(s))
	for i, e := range s {
		out[i] = FirstShown{At: e.at.Seconds(), Position: e.pos, ETA: e.eta.Seconds(), Real: e.real.Seconds()}
	}
	return out
}

// firstEstimate is the etaSample of a user who entered at enterAt and was
// admitted at admitted (both after the run's start) with shown its
// WAITING statuses; ok is false when none carried an estimate.
func firstEstimate(shown []etaShown, enterAt, admitted time.Duration) (etaSample, bool) {
	for _, s := range shown {
		if s.eta >= 0 {
			return etaSample{eta: time.Duration(s.eta) * time.Second, real: admitted - s.at, after: s.at - enterAt, at: s.at, pos: s.pos}, true
		}
	}
	return etaSample{}, false
}

// etaAccuracy is how far the first estimates shown were from the real
// waits: the absolute percentage error |eta − real| ÷ max(real, etaFloor)
// × 100, its median and p90 (nearest rank), and the median signed error in
// seconds (positive: the ETA promised longer than the wait); how many
// users were shown theirs at entry, and how long the others waited for it.
type etaAccuracy struct {
	Count            int     `json:"count"`
	MedianAPE        float64 `json:"medianAbsPctError"`
	P90APE           float64 `json:"p90AbsPctError"`
	MedianErrSeconds float64 `json:"medianSignedErrorSeconds"`
	AtEntry          int     `json:"atEntry"`
	// MedianAfterSeconds and MaxAfterSeconds: time from entry to the first
	// estimate, over all Count users.
	MedianAfterSeconds float64 `json:"medianAfterSeconds"`
	MaxAfterSeconds    float64 `json:"maxAfterSeconds"`
}

func newETAAccuracy(s []etaSample) etaAccuracy {
	if len(s) == 0 {
		return etaAccuracy{}
	}
	apes := make([]float64, len(s))
	errs := make([]float64, len(s))
	after := make([]float64, len(s))
	a := etaAccuracy{Count: len(s)}
	for i, e := range s {
		d := e.eta - e.real
		apes[i] = 100 * math.Abs(float64(d)) / float64(max(e.real, etaFloor))
		errs[i] = d.Seconds()
		after[i] = e.after.Seconds()
		if e.after == 0 {
			a.AtEntry++
		}
	}
	slices.Sort(apes)
	slices.Sort(errs)
	slices.Sort(after)
	a.MedianAPE, a.P90APE, a.MedianErrSeconds = percentileF(apes, 50), percentileF(apes, 90), percentileF(errs, 50)
	a.MedianAfterSeconds, a.MaxAfterSeconds = percentileF(after, 50), after[len(after)-1]
	return a
}

// percentileF is Percentile for float64s: nearest rank of sorted.
func percentileF(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(n) / 100))
	return sorted[min(max(rank, 1), n)-1]
}

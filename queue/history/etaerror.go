package history

import (
	"math"
	"slices"
	"sort"
	"time"
)

// ETAError is how far the estimates recorded in a room's history were
// from the waits that followed: at each point the last in line and the
// one in the middle were shown an ETA; each had their turn at the first
// later point whose oldest waiting ticket is past theirs (or nobody
// waits). The error is |ETA − wait| ÷
// wait. Waits under minJudged are left out: the history's one-second
// resolution would dominate them.
type ETAError struct {
	Count     int     `json:"count"`               // estimates judged
	MedianPct float64 `json:"medianAbsPctError"`   // 0 when Count is 0
	P90Pct    float64 `json:"p90AbsPctError"`      // 0 when Count is 0
	MedianErr float64 `json:"medianSignedSeconds"` // ETA − wait; positive: promised longer
}

// minJudged is the shortest wait an estimate recorded once a second is
// judged against.
const minJudged = 10 * time.Second

// ETAErrors judges the estimates of points (oldest first, as Since returns
// them) whose user — the last in line, and the one in the middle — has
// had their turn by the last point.
func ETAErrors(points []Point) ETAError {
	var apes, signed []float64
	judge := func(i int, eta, ticket int64) {
		if eta < 0 || ticket <= 0 {
			return
		}
		// the first later point that served the ticket (served only
		// turns true as the queue moves: a binary search)
		rest := points[i+1:]
		j := sort.Search(len(rest), func(j int) bool { return served(rest[j], ticket) })
		if j == len(rest) {
			return
		}
		wait := rest[j].At.Sub(points[i].At)
		if wait < minJudged {
			return
		}
		d := time.Duration(eta)*time.Second - wait
		apes = append(apes, 100*math.Abs(float64(d))/float64(wait))
		signed = append(signed, d.Seconds())
	}
	for i, p := range points {
		if p.Waiting == 0 {
			continue
		}
		judge(i, p.ETA, p.Seq)
		judge(i, p.ETAMid, p.MidTicket)
	}
	if len(apes) == 0 {
		return ETAError{}
	}
	slices.Sort(apes)
	slices.Sort(signed)
	return ETAError{Count: len(apes), MedianPct: nearestRank(apes, 50), P90Pct: nearestRank(apes, 90), MedianErr: nearestRank(signed, 50)}
}

// served reports whether ticket seq had had its turn by point p: the
// oldest waiting ticket is past it, or nobody waits. (A room made anew
// starts its tickets again, lower: its points serve the old tickets too.)
func served(p Point, seq int64) bool {
	return p.Waiting == 0 || p.Head > seq || p.Seq < seq
}

// nearestRank is the p-th percentile of sorted, by nearest rank.
func nearestRank(sorted []float64, p float64) float64 {
	k := int(math.Ceil(p*float64(len(sorted))/100)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

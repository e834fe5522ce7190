package history

import (
	"math"
	"slices"
	"time"
)

// ETAError is how far the estimates recorded in a room's history were
// from the waits that followed: each point's last in line was shown an
// ETA; they had their turn at the first later point whose oldest waiting
// ticket is past theirs (or nobody waits). The error is |ETA − wait| ÷
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
// them) whose last in line has had their turn by the last point.
func ETAErrors(points []Point) ETAError {
	var apes, signed []float64
	j := 0
	for i, p := range points {
		if p.ETA < 0 || p.Seq <= 0 || p.Waiting == 0 {
			continue
		}
		j = max(j, i+1)
		for j < len(points) && !served(points[j], p.Seq) {
			j++
		}
		if j == len(points) {
			break // not yet served: nor is anyone behind (Seq only grows)
		}
		wait := points[j].At.Sub(p.At)
		if wait < minJudged {
			continue
		}
		eta := time.Duration(p.ETA) * time.Second
		apes = append(apes, 100*math.Abs(float64(eta-wait))/float64(wait))
		signed = append(signed, (eta - wait).Seconds())
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

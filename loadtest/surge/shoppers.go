package surge

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"waitingroom/loadtest/internal/report"
)

// The surge's shoppers, like people: when they arrive (a burst at the
// opening plus a trickle), how long they take from READY to the order
// (log-normal), and who never orders (no-shows), gives up while waiting
// (abandons) or reloads the page mid-wait. Every draw comes from one
// seeded generator, so a run's crowd is the same for the same flags.

// shopperModel is the surge's --think-*, --no-shows, --abandons,
// --reloads, --patience, --burst and --trickle-over flags.
type shopperModel struct {
	thinkMedian time.Duration // median time from READY to the order; 0: at once
	thinkSigma  float64       // the log-normal's σ (of ln think)
	thinkMax    time.Duration // a longer draw is cut to this (set from the entry window)
	noShows     float64       // share admitted who never order
	abandons    float64       // share who stop waiting at a random point
	reloads     float64       // share who reload the page once mid-wait
	patience    time.Duration // abandons and reloads fall within this of entering
	burst       float64       // share arriving over --over; the rest over --trickle-over
	trickleOver time.Duration
	seed        uint64
}

// flashSale is the surge's default crowd: a plausible flash sale.
var flashSale = shopperModel{thinkMedian: 5 * time.Second, thinkSigma: 0.6, noShows: 0.10, abandons: 0.05, reloads: 0.10,
	patience: 60 * time.Second, burst: 0.8, trickleOver: 60 * time.Second, seed: 1}

// InstantShoppers is the tool's older crowd, a machine: everyone arrives
// over --over, orders the moment they are READY, and nobody leaves.
var InstantShoppers = shopperModel{burst: 1, seed: 1}

// shopperPlan is what one shopper will do, drawn at the start.
type shopperPlan struct {
	think   time.Duration // READY → order
	noShow  bool          // admitted, never orders
	abandon time.Duration // stops waiting this long after entering; 0: never
	reload  time.Duration // reloads this long after entering; 0: never
}

// shopperFlags registers the model's flags on fs with def's values; the
// returned func, called after parsing, checks them.
func shopperFlags(fs *flag.FlagSet, def shopperModel) func() (shopperModel, error) {
	m := def
	fs.DurationVar(&m.thinkMedian, "think-median", def.thinkMedian, "median time from READY to the order, drawn log-normal per shopper (0: order at once)")
	fs.Float64Var(&m.thinkSigma, "think-sigma", def.thinkSigma, "σ of the think time's log-normal (0: every shopper takes the median)")
	noShows := fs.String("no-shows", share(def.noShows), "share of shoppers admitted who never order (their entry window expires)")
	abandons := fs.String("abandons", share(def.abandons), "share of shoppers who give up while waiting (stream closed or polls stopped, no leave) at a random point within --patience")
	reloads := fs.String("reloads", share(def.reloads), "share of shoppers who reload the page once at a random point within --patience (connection dropped, back with the same queue token)")
	fs.DurationVar(&m.patience, "patience", def.patience, "the abandons and reloads fall uniformly within this time after entering")
	burst := fs.String("burst", share(def.burst), "share of shoppers arriving evenly over --over at the opening; the rest trickle in at random over --trickle-over")
	fs.DurationVar(&m.trickleOver, "trickle-over", def.trickleOver, "the trickle's arrivals fall uniformly within this time of the opening")
	fs.Uint64Var(&m.seed, "shopper-seed", def.seed, "seed of the shoppers' draws (the same seed, the same crowd)")
	instant := fs.Bool("instant", false, "shoppers as machines, the tool's older crowd: everyone arrives over --over and orders at once, nobody leaves or reloads (overrides the flags above)")
	return func() (shopperModel, error) {
		var err error
		for _, s := range []struct {
			name, v string
			to      *float64
		}{{"--no-shows", *noShows, &m.noShows}, {"--abandons", *abandons, &m.abandons}, {"--reloads", *reloads, &m.reloads}, {"--burst", *burst, &m.burst}} {
			if *s.to, err = parsePercent(s.v); err != nil {
				return m, fmt.Errorf("%s: %w", s.name, err)
			}
		}
		if m.thinkMedian < 0 || m.thinkSigma < 0 || m.patience < 0 || m.trickleOver < 0 {
			return m, errors.New("--think-median, --think-sigma, --patience and --trickle-over must not be negative")
		}
		if (m.abandons > 0 || m.reloads > 0) && m.patience < 2*time.Second {
			return m, errors.New("--patience must be at least 2s when some shoppers abandon or reload")
		}
		if *instant {
			m = shopperModel{burst: 1, seed: m.seed}
		}
		return m, nil
	}
}

// share prints a share as flags take it: 0.05 → "5%".
func share(f float64) string { return report.TrimZero(fmt.Sprintf("%.2f", 100*f)) + "%" }

// plans draws n shoppers' plans.
func (m shopperModel) plans(n int) []shopperPlan {
	rng := rand.New(rand.NewPCG(m.seed, 0x5eed))
	out := make([]shopperPlan, n)
	for i := range out {
		out[i] = m.draw(rng)
	}
	return out
}

// draw is one shopper's plan. Every shopper takes the same number of draws,
// so one share's change leaves the others' draws as they were.
func (m shopperModel) draw(rng *rand.Rand) shopperPlan {
	z, u1, u2, u3, a, r := rng.NormFloat64(), rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
	p := shopperPlan{noShow: u1 < m.noShows}
	if m.thinkMedian > 0 {
		p.think = time.Duration(float64(m.thinkMedian) * math.Exp(m.thinkSigma*z))
		if m.thinkMax > 0 {
			p.think = min(p.think, m.thinkMax)
		}
	}
	within := func(f float64) time.Duration { return time.Second + time.Duration(f*float64(m.patience-time.Second)) }
	if u2 < m.abandons {
		p.abandon = within(a)
	}
	if u3 < m.reloads {
		p.reload = within(r)
	}
	return p
}

// arrivals are n arrival times after the opening, in order: the burst's
// share evenly over over (the first at 0), the trickle's at random
// within trickleOver.
func (m shopperModel) arrivals(n int, over time.Duration) []time.Duration {
	nb := int(math.Round(m.burst * float64(n)))
	if m.trickleOver == 0 {
		nb = n
	}
	out := make([]time.Duration, 0, n)
	for i := range nb {
		at := time.Duration(0)
		if nb > 1 {
			at = time.Duration(int64(over) * int64(i) / int64(nb-1))
		}
		out = append(out, at)
	}
	rng := rand.New(rand.NewPCG(m.seed, 0xa771))
	for range n - nb {
		out = append(out, time.Duration(rng.Int64N(int64(m.trickleOver)+1)))
	}
	slices.Sort(out)
	return out
}

// String says the model in a line, for the report.
func (m shopperModel) String() string {
	if m == (shopperModel{burst: 1, seed: m.seed}) {
		return "instant (every user orders at once, nobody leaves)"
	}
	return fmt.Sprintf("think median %v σ %.2g; no-shows %s, abandons %s, reloads %s within %v; burst %s, trickle over %v; seed %d",
		m.thinkMedian, m.thinkSigma, share(m.noShows), share(m.abandons), share(m.reloads), m.patience, share(m.burst), m.trickleOver, m.seed)
}

package surge

import (
	"flag"
	"io"
	"math"
	"slices"
	"testing"
	"time"
)

// TestShopperDraws checks the flash sale's draws with the fixed seed: the
// think time's median and spread, and each share near its value.
func TestShopperDraws(t *testing.T) {
	const n = 20_000
	m := flashSale
	m.thinkMax = 96 * time.Second
	plans := m.plans(n)
	var thinks []float64
	noShows, abandons, reloads, overSigma := 0, 0, 0, 0
	for _, p := range plans {
		thinks = append(thinks, p.think.Seconds())
		if p.think > time.Duration(float64(m.thinkMedian)*math.Exp(m.thinkSigma)) {
			overSigma++
		}
		if p.noShow {
			noShows++
		}
		if p.abandon > 0 {
			abandons++
			if p.abandon < time.Second || p.abandon > m.patience {
				t.Errorf("abandon after %v: want within 1 s … %v", p.abandon, m.patience)
			}
		}
		if p.reload > 0 {
			reloads++
			if p.reload < time.Second || p.reload > m.patience {
				t.Errorf("reload after %v: want within 1 s … %v", p.reload, m.patience)
			}
		}
		if p.think > m.thinkMax {
			t.Errorf("think %v over the cap %v", p.think, m.thinkMax)
		}
	}
	if med := median(thinks); math.Abs(med-5) > 0.25 {
		t.Errorf("think median: got %.2f s, want 5 ± 0.25", med)
	}
	// P(z > 1) = 15.9 %: the share thinking longer than median × e^σ.
	near := func(name string, got int, want float64) {
		if share := float64(got) / n; math.Abs(share-want) > 0.015 {
			t.Errorf("%s: got %.3f, want %.3f ± 0.015", name, share, want)
		}
	}
	near("think > median·e^σ", overSigma, 0.159)
	near("no-shows", noShows, m.noShows)
	near("abandons", abandons, m.abandons)
	near("reloads", reloads, m.reloads)
	if again := m.plans(n); !slices.Equal(again, plans) {
		t.Errorf("the same seed drew another crowd")
	}
	m.seed++
	if other := m.plans(n); slices.Equal(other, plans) {
		t.Errorf("another seed drew the same crowd")
	}
}

func TestShopperArrivals(t *testing.T) {
	// Instant: evenly over --over, the first at 0, as the tool always did.
	got := InstantShoppers.arrivals(5, 4*time.Second)
	if want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("instant: got %v, want %v", got, want)
	}
	if got := InstantShoppers.arrivals(1, 4*time.Second); !slices.Equal(got, []time.Duration{0}) {
		t.Errorf("one user: got %v", got)
	}
	// The flash sale: 80 % over 10 s, 20 % at random over 60 s; about
	// 50/60 of the trickle after the burst.
	const n = 10_000
	a := flashSale.arrivals(n, 10*time.Second)
	if len(a) != n || !slices.IsSorted(a) || a[0] != 0 || a[n-1] > 60*time.Second {
		t.Fatalf("got %d arrivals, sorted %v, first %v, last %v", len(a), slices.IsSorted(a), a[0], a[n-1])
	}
	late := 0
	for _, at := range a {
		if at > 10*time.Second {
			late++
		}
	}
	if want := 2000.0 * 50 / 60; math.Abs(float64(late)-want) > 100 {
		t.Errorf("arrivals after the burst: got %d, want %.0f ± 100", late, want)
	}
}

func TestShopperFlags(t *testing.T) {
	parse := func(args ...string) (shopperModel, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		get := shopperFlags(fs, flashSale)
		if err := fs.Parse(args); err != nil {
			return shopperModel{}, err
		}
		return get()
	}
	m, err := parse()
	if err != nil || m != flashSale {
		t.Errorf("defaults: got %+v, %v; want the flash sale", m, err)
	}
	m, err = parse("--no-shows", "20%", "--abandons", "0", "--burst", "0.5", "--think-median", "2s")
	if err != nil || m.noShows != 0.2 || m.abandons != 0 || m.burst != 0.5 || m.thinkMedian != 2*time.Second {
		t.Errorf("got %+v, %v", m, err)
	}
	m, err = parse("--instant", "--no-shows", "20%")
	if err != nil || m != InstantShoppers {
		t.Errorf("--instant: got %+v, %v; want %+v", m, err, InstantShoppers)
	}
	for _, bad := range [][]string{{"--no-shows", "150%"}, {"--burst", "x"}, {"--think-sigma", "-1"}, {"--patience", "1s"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

package admin

import (
	"strconv"
	"testing"
	"time"
)

func TestThrottleBurstThenOnePerInterval(t *testing.T) {
	var th throttle
	now := time.Unix(1_000_000, 0)
	for i := range failBurst {
		if _, refused := th.refused("a", now); refused {
			t.Fatalf("failure %d refused within the burst", i+1)
		}
		th.fail("a", now)
	}
	wait, refused := th.refused("a", now)
	if !refused || wait != failEvery {
		t.Fatalf("after the burst: refused %v, wait %v; want true, %v", refused, wait, failEvery)
	}
	if _, refused := th.refused("b", now); refused {
		t.Fatal("another address is refused")
	}
	if _, refused := th.refused("a", now.Add(failEvery)); refused {
		t.Fatal("still refused once one interval has passed")
	}
}

func TestThrottleForgetsPaidAddressesAtTheBound(t *testing.T) {
	var th throttle
	now := time.Unix(1_000_000, 0)
	for i := range failAddrs {
		th.fail(strconv.Itoa(i), now)
	}
	later := now.Add(failEvery)
	th.fail("new", later)
	if len(th.tat) != 1 {
		t.Fatalf("%d addresses tracked; want only the new one", len(th.tat))
	}
}

package surge

import (
	"strings"
	"testing"
	"time"

	"waitingroom/loadtest/internal/client"
)

// TestAbsentFrom: the abandoners admitted are the room's admissions the
// tool never saw READY; the slot time they held is one entry window each.
func TestAbsentFrom(t *testing.T) {
	before := client.RoomState{Admitted: 100, PassedOver: 4, Abandoned: 1}
	after := client.RoomState{Admitted: 700, PassedOver: 31, Abandoned: 3}
	a := absentFrom(before, after, 594, 2*time.Minute)
	if a.Admitted != 600 || a.AbandonedAdmitted != 6 || a.PassedOver != 27 || a.Dropped != 2 || a.SlotSeconds != 720 {
		t.Fatalf("figures %+v; want 600 admitted, 6 abandoners admitted, 27 passed over, 2 dropped, 720 slot-seconds", a)
	}
	if got := a.share(); got != 1 {
		t.Errorf("share %.2f %%, want 1 %%", got)
	}
	if s := a.noShowString(60); !strings.Contains(s, "60 never ordered while present; 6 abandoned before their admission") {
		t.Errorf("no-shows by cause: %q", s)
	}
	if s := a.slotString(60, 100); !strings.Contains(s, "720 slot-seconds") || !strings.Contains(s, "12.0 % of the room's 6000") {
		t.Errorf("slots held: %q", s)
	}
	// More READY than admissions counted (another client's run): never
	// negative.
	if a := absentFrom(before, after, 650, time.Minute); a.AbandonedAdmitted != 0 {
		t.Errorf("abandoners admitted %d with more READY than admissions", a.AbandonedAdmitted)
	}
	if s := (absentFigures{}).noShowString(3); !strings.Contains(s, "unknown") {
		t.Errorf("unread counters: %q", s)
	}
}

package browser

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"waitingroom/cmd/waitingroom/systemtest"
)

// listReads records the dashboard's reads of GET /admin/rooms and
// GET /admin/stats on their way to the management port.
type listReads struct {
	mu    sync.Mutex
	lists []url.Values // the query of each GET /admin/rooms
	stats []url.Values // the query of each GET /admin/stats
}

func newListReads(t *testing.T, admin string) (*listReads, string) {
	t.Helper()
	target, _ := url.Parse(admin)
	proxy := httputil.NewSingleHostReverseProxy(target)
	transport := &http.Transport{}
	proxy.Transport = transport
	proxy.ErrorLog = log.New(t.Output(), "dashboard's admin proxy: ", 0) // the test's output, not stderr
	lr := &listReads{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lr.mu.Lock()
		switch r.URL.Path {
		case "/admin/rooms":
			lr.lists = append(lr.lists, r.URL.Query())
		case "/admin/stats":
			lr.stats = append(lr.stats, r.URL.Query())
		}
		lr.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	return lr, srv.URL
}

// TestDashboardManyRooms: among many rooms the dashboard lists those with
// someone in them first, finds any other by the start of its name, and
// never reads every room: each list read is a page of at most 50, and the
// stats are the selected room's.
func TestDashboardManyRooms(t *testing.T) {
	systemtest.Parallel(t)
	b := newBrowser(t)
	_, in := pageEnv(t, nil)
	for i := range 70 {
		if r := systemtest.Do(t, "PUT", fmt.Sprintf("%s/admin/rooms/aa-%02d", in.Admin, i), systemtest.TestAdminToken, `{}`); r.Status != 200 {
			t.Fatal(r.Raw)
		}
	}
	if r := systemtest.Do(t, "PUT", in.Admin+"/admin/rooms/zz-busy", systemtest.TestAdminToken, `{}`); r.Status != 200 {
		t.Fatal(r.Raw)
	}
	in.Enter(systemtest.User(1), "zz-busy")
	reads, base := newListReads(t, in.Admin)
	p := openDashboard(t, b, in, base)
	p.giveToken(systemtest.TestAdminToken)
	p.waitLive()
	rows := `[...document.querySelectorAll('#rooms-table tbody tr')].map((tr) => tr.dataset.room)`
	p.waitJS("the busy room first", rows+`[0] === 'zz-busy'`)
	if n := eval[int](p, rows+`.length`); n > 51 {
		t.Errorf("%d rows; want at most 50 and the selected room", n)
	}
	p.waitJS("the note that more rooms exist", shown("rooms-more"))

	p.setField("room-search", "aa-6")
	p.waitJS("the rooms found", rows+`.filter((n) => n.startsWith('aa-6')).length === 10 && !`+rows+`.includes('aa-00')`)
	p.click(`#rooms-table button[data-room="aa-64"]`)
	p.waitJS("aa-64 selected", textOf("room-name")+` === 'aa-64'`)
	systemtest.WaitFor(t, "the stats of aa-64 read", func() bool {
		reads.mu.Lock()
		defer reads.mu.Unlock()
		return len(reads.stats) > 0 && reads.stats[len(reads.stats)-1].Get("room") == "aa-64"
	})

	reads.mu.Lock()
	defer reads.mu.Unlock()
	if len(reads.lists) < 3 {
		t.Fatalf("%d list reads", len(reads.lists))
	}
	for _, q := range reads.lists {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > 50 {
			t.Errorf("a list read of %v: want a limit of at most 50", q)
		}
		if q.Get("busy") == "" && q.Get("prefix") == "" {
			t.Errorf("a list read of %v: neither busy rooms nor a search", q)
		}
	}
	for _, q := range reads.stats {
		if q.Get("room") == "" {
			t.Errorf("a stats read of %v: want the selected room's", q)
		}
	}
}

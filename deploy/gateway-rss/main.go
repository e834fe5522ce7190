// Command gateway-rss starts an origin and a waitingroom process in
// gateway mode in front of it (Redis and Postgres from REDIS_URL and
// DATABASE_URL), runs one attack on loopback and reports the gateway's
// RSS (VmRSS, Linux) before, at its peak while the attack runs, and after:
//
//	go build -o /tmp/wr ./cmd/waitingroom
//	go run ./deploy/gateway-rss -bin /tmp/wr -scenario download -clients 10 -size 209715200
//	go run ./deploy/gateway-rss -bin /tmp/wr -scenario upload -clients 16 -size 33554432
//	go run ./deploy/gateway-rss -bin /tmp/wr -scenario upload-protected -clients 16 -size 33554432
//
// download: slow readers (16 KiB a second) of a Content-Length answer;
// upload: bodies to an unprotected path the origin reads; upload-protected:
// bodies to a protected path, without a pass.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func rss(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

func freePort() string {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	return l.Addr().String()
}

func main() {
	bin := flag.String("bin", "", "waitingroom binary")
	scenario := flag.String("scenario", "download", "download | upload | upload-protected")
	clients := flag.Int("clients", 10, "concurrent clients")
	size := flag.Int64("size", 200<<20, "bytes per download or upload")
	hold := flag.Duration("hold", 15*time.Second, "how long the attack runs")
	flag.Parse()

	var uploaded atomic.Int64
	originAddr := startOrigin(*size, &uploaded)
	pub, pid, stopInstance := startInstance(*bin, originAddr)
	defer stopInstance()
	before := rss(pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var conns connList
	for range *clients {
		wg.Go(func() { attack(pub, *scenario, *size, stop, &conns) })
	}
	peak := before
	deadline := time.Now().Add(*hold)
	for time.Now().Before(deadline) {
		if r := rss(pid); r > peak {
			peak = r
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	conns.closeAll()
	wg.Wait()
	time.Sleep(2 * time.Second)
	after := rss(pid)
	fmt.Printf("%s: %d clients × %d MiB: RSS before %d MiB, peak %d MiB (+%d MiB), 2 s after %d MiB; origin received %d MiB\n",
		*scenario, *clients, *size>>20, before>>20, peak>>20, (peak-before)>>20, after>>20, uploaded.Load()>>20)
}

// piece is what the origin and the uploaders write at a time.
var piece = make([]byte, 64<<10)

// startOrigin serves the origin: /big answers size bytes with a
// Content-Length; anything else is read and discarded, counted in
// uploaded. It returns the origin's address.
func startOrigin(size int64, uploaded *atomic.Int64) string {
	origin := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			for sent := int64(0); sent < size; sent += int64(len(piece)) {
				if _, err := w.Write(piece); err != nil {
					return
				}
			}
		default:
			n, _ := io.Copy(io.Discard, r.Body)
			uploaded.Add(n)
		}
	})}
	ol, _ := net.Listen("tcp", "127.0.0.1:0")
	go origin.Serve(ol)
	return ol.Addr().String()
}

// startInstance runs bin in gateway mode in front of origin and waits for
// its /readyz; it returns the public address, the process id and a stop.
func startInstance(bin, origin string) (pub string, pid int, stop func()) {
	pub, adm := freePort(), freePort()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "WR_UPSTREAM=http://"+origin, "WR_PROTECT=POST /checkout/*=sale",
		"WR_ROOMS=sale", "WR_DEV=1", "WR_HTTP_ADDR="+pub, "WR_ADMIN_ADDR="+adm, "WR_RATE_LIMITS=off",
		"WR_UPSTREAM_TIMEOUT=10m", "WR_LOG_LEVEL=error")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	for i := 0; ; i++ {
		if res, err := http.Get("http://" + adm + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if i > 300 {
			_ = cmd.Process.Kill()
			panic("the instance did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return pub, cmd.Process.Pid, func() { _ = cmd.Process.Kill() }
}

// connList are the attackers' connections, closed together at the end.
type connList struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connList) add(c net.Conn) {
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
}

func (l *connList) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// attack is one client of the scenario until stop: a slow reader of /big
// (download), or an uploader of size bytes to /upload or a protected route.
func attack(pub, scenario string, size int64, stop <-chan struct{}, conns *connList) {
	c, err := net.Dial("tcp", pub)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	conns.add(c)
	if scenario == "download" {
		slowRead(c, stop)
		return
	}
	path := "/upload"
	if scenario == "upload-protected" {
		path = "/checkout/pay"
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", path, size)
	for sent := int64(0); sent < size; sent += int64(len(piece)) {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := c.Write(piece); err != nil {
			return
		}
	}
	_, _ = bufio.NewReader(c).ReadString('\n')
	<-stop
}

// slowRead asks for /big and reads 16 KiB a second until stop.
func slowRead(c net.Conn, stop <-chan struct{}) {
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReaderSize(c, 16<<10)
	buf := make([]byte, 16<<10)
	for {
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
		if _, err := br.Read(buf); err != nil {
			return
		}
	}
}

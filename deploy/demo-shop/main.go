// Command demo-shop is the origin of make run-gateway: it serves the
// static demo shop (deploy/origin: a front page and /checkout/) and logs
// every request it gets, with whether it carried a pass
// (Waitingroom-Pass), so the demo shows what reaches the origin through
// the gateway and what does not.
//
//	go run ./deploy/demo-shop [--listen 127.0.0.1:8090] [--dir deploy/origin] [--log FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8090", "address to serve on (WR_UPSTREAM points here)")
	dir := flag.String("dir", "deploy/origin", "the shop's static files")
	logPath := flag.String("log", "", "append the request log to this file (default stderr)")
	flag.Parse()
	if fi, err := os.Stat(*dir); err != nil || !fi.IsDir() {
		log.Fatalf("demo-shop: --dir %s is not a directory", *dir)
	}
	var out io.Writer = os.Stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			log.Fatalf("demo-shop: --log: %v", err)
		}
		defer f.Close()
		out = f
	}
	srv := &http.Server{Addr: *listen, Handler: logged(out, http.FileServer(http.Dir(*dir))),
		ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "demo-shop: serving %s on http://%s/\n", *dir, *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("demo-shop: %v", err)
	}
}

// logged writes a line per request to w: the time, the method, the path
// and query, and "pass" when the gateway sent one.
func logged(w io.Writer, next http.Handler) http.Handler {
	l := log.New(w, "", log.LstdFlags)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		pass := "no pass"
		if r.Header.Get("Waitingroom-Pass") != "" {
			pass = "pass"
		}
		l.Printf("%s %s (%s)", r.Method, r.URL.RequestURI(), pass)
		next.ServeHTTP(rw, r)
	})
}

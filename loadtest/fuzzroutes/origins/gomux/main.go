// Command gomux is a Go net/http origin for the fuzz-routes scenario
// (loadtest/fuzzroutes): a ServeMux with Go 1.22 patterns, as it comes
// (case-sensitive; a path with dot segments or repeated slashes is
// redirected to its clean form; "GET /checkout/{rest...}" also answers
// HEAD; escaped slashes stay inside a segment). Each run of a protected
// handler is one JSON line appended to $ORIGIN_LOG; it listens on
// $ORIGIN_ADDR and prints "ready" once it does.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gomux:", err)
		os.Exit(1)
	}
}

func run() error {
	f, err := os.OpenFile(os.Getenv("ORIGIN_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var mu sync.Mutex
	protected := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			line, _ := json.Marshal(map[string]any{"handler": name, "method": r.Method, "target": r.RequestURI,
				"pass": r.Header.Get("Waitingroom-Pass") != "", "case": r.Header.Get("Fuzz-Case")})
			mu.Lock()
			_, _ = f.Write(append(line, '\n'))
			mu.Unlock()
			fmt.Fprint(w, "protected")
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /__ready", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ready") })
	mux.HandleFunc("GET /checkout", protected("checkout"))
	mux.HandleFunc("GET /checkout/{rest...}", protected("checkout/{rest...}"))
	mux.HandleFunc("POST /api/orders", protected("orders"))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "open") })
	ln, err := net.Listen("tcp", os.Getenv("ORIGIN_ADDR"))
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return http.Serve(ln, mux)
}

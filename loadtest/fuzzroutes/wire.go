package fuzzroutes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"waitingroom/loadtest/internal/proc"
)

// conn is one keep-alive connection to a front door, dialled when first
// needed and again after the server closed it.
type conn struct {
	addr    string
	timeout time.Duration
	c       net.Conn
	br      *bufio.Reader
	used    bool // a request was answered on c: a failure may be a stale keep-alive
}

// answer is what a front door answered to one request.
type answer struct {
	status int
	body   string // its first bytes
}

// bodyPeek is how much of an answer's body is kept.
const bodyPeek = 64

// roundTrip sends wire and reads the answer. A request that fails on a
// reused connection other than by timing out is sent once more on a new
// one (the server may have closed it while idle).
func (k *conn) roundTrip(wire []byte, method string) (answer, error) {
	a, err := k.try(wire, method)
	var ne net.Error
	if err != nil && k.used && !(errors.As(err, &ne) && ne.Timeout()) {
		k.close()
		a, err = k.try(wire, method)
	}
	if err != nil {
		k.close()
	}
	return a, err
}

func (k *conn) try(wire []byte, method string) (answer, error) {
	if k.c == nil {
		c, err := net.DialTimeout("tcp", k.addr, k.timeout)
		if err != nil {
			return answer{}, err
		}
		k.c, k.br, k.used = c, bufio.NewReader(c), false
	}
	_ = k.c.SetDeadline(time.Now().Add(k.timeout))
	if _, err := k.c.Write(wire); err != nil {
		return answer{}, err
	}
	res, err := http.ReadResponse(k.br, &http.Request{Method: method})
	if err != nil {
		return answer{}, err
	}
	var b strings.Builder
	_, err = io.Copy(&b, io.LimitReader(res.Body, bodyPeek))
	if err == nil {
		_, err = io.Copy(io.Discard, res.Body)
	}
	res.Body.Close()
	if err != nil {
		return answer{}, err
	}
	k.used = true
	if res.Close {
		k.close()
	}
	return answer{status: res.StatusCode, body: b.String()}, nil
}

func (k *conn) close() {
	if k.c != nil {
		k.c.Close()
		k.c, k.br = nil, nil
	}
}

// awaitAnswer polls GET path of addr until it answers 200 with body want,
// giving up when p exits or after startDeadline.
func awaitAnswer(ctx context.Context, p *proc.Proc, addr, path, want string) error {
	deadline := time.Now().Add(startDeadline)
	k := &conn{addr: addr, timeout: 5 * time.Second}
	defer k.close()
	wire := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")
	for {
		a, err := k.roundTrip(wire, "GET")
		if err == nil && a.status == 200 && a.body == want {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d %q", a.status, a.body)
		}
		if rerr := running(p); rerr != nil {
			return rerr
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("fuzzroutes: %s: GET %s not answered %q within %v", p.Name, path, want, startDeadline), err, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond) // a poll: the origin says nothing when it is ready
	}
}

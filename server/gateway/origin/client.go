package origin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Forwarding (Client.Forward): method, path (as the public port's
// server normalized it, not the canonical form routes are matched on),
// query and body go to the origin; hop-by-hop and rerouting headers
// (X-HTTP-Method-Override, X-Original-URL ...), the waiting room's
// cookies, any client-sent pass header (Config.PassHeader), and any
// header spelled with "_" like one of those or of the gateway's own do
// not (Client.Prepare). X-Forwarded-For (a trusted proxy's chain plus the
// peer), X-Forwarded-Proto, X-Forwarded-Host and Forwarded are set; Host
// is kept. Bodies stream both ways: a request body as the client sends it
// (up to Config.BodyLimit, ErrTooLarge beyond), an answer as the
// visitor reads it, whatever its framing, through a fixed read buffer per
// connection (a slow reader holds the origin back). The origin's answers
// are read strictly (response.go): conflicting lengths, a bare CR, a 101
// nobody asked for are ErrBadGateway; 1xx interim answers are skipped;
// Set-Cookie for the waiting room's cookies is dropped.
// Config.Timeout bounds the wait for the headers and each silence in the
// body. An origin that fails before its headers is ErrBadGateway or
// ErrTimeout; one that fails while its body streams has its connection to
// the visitor closed (the status was already sent).

// Client is the origin behind the gateway: an HTTP/1.1 client of its
// own (response.go reads the answers) so that every answer streams with
// bounded memory and is read strictly, over a pool of idle connections.
type Client struct {
	addr, host string
	tls        bool
	connect    time.Duration
	timeout    time.Duration
	bodyLimit  int64
	passHeader string
	setHeaders []string // setHeaders with the pass header first
	idle       pool
	open       tunnels
	tc         TunnelConfig
}

// Limits of the origin's connections and answers.
const (
	// responseHeaderLimit bounds the origin's status line and headers: an
	// origin sending more is answered 502.
	responseHeaderLimit = 64 << 10
	// readBufferSize is each origin connection's read buffer: what the
	// gateway holds of a streaming answer besides the sockets' buffers.
	readBufferSize = 8 << 10
	// smallBody: an answer of at most this Content-Length is read whole
	// before it is sent; a larger one, or one chunked or delimited by the
	// origin's close (a stream), is sent as it comes.
	smallBody = 16 << 10
	// maxIdleConns and maxIdleTime bound the pool of idle connections.
	maxIdleConns = 128
	maxIdleTime  = 30 * time.Second
)

// Config is the origin's address and limits.
type Config struct {
	URL            string        // http://host:port or https://host:port, no path
	ConnectTimeout time.Duration // connecting to the origin, its TLS handshake included
	// Timeout bounds the wait for the origin's response headers and each
	// silence while its body streams, not the whole body: a long download
	// at a steady pace is never cut.
	Timeout   time.Duration
	BodyLimit int // request bodies, streamed (413 beyond)
	Tunnels   TunnelConfig
	// PassHeader is the header the gateway hands the origin a pass in: a
	// client's own is never forwarded (Prepare), in either spelling.
	PassHeader string
}

// ParseURL checks Config.URL's form and returns its address (host:port,
// the scheme's port when none is given) and whether it speaks TLS.
func ParseURL(raw string) (addr string, tls bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, errors.New("want http://host:port or https://host:port")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", false, errors.New("want the origin's scheme, host and port only (no path, query or credentials)")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(host, port), u.Scheme == "https", nil
}

// New returns the client of c's origin. It does no I/O. Its error is
// ParseURL's.
func New(c Config) (*Client, error) {
	addr, tls, err := ParseURL(c.URL)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return &Client{addr: addr, host: host, tls: tls, connect: c.ConnectTimeout, timeout: c.Timeout,
		bodyLimit: int64(c.BodyLimit), passHeader: c.PassHeader,
		setHeaders: append([]string{c.PassHeader}, setHeaders...), tc: c.Tunnels.withDefaults()}, nil
}

// Addr is the origin's address as the client dials it (host:port).
func (u *Client) Addr() string { return u.addr }

// BodyLimit is the largest request body forwarded (Config.BodyLimit).
func (u *Client) BodyLimit() int64 { return u.bodyLimit }

// Timeout is the wait for the origin's answer (Config.Timeout).
func (u *Client) Timeout() time.Duration { return u.timeout }

// Close closes the idle connections to the origin and every joined
// (WebSocket) connection (at shutdown).
func (u *Client) Close() {
	u.idle.closeAll()
	u.open.closeAll()
}

// Failure kinds of a forward: the origin did not answer in time, or could
// not be reached or answered something unusable; the request's body was
// too large or could not be read from the client.
var (
	ErrTimeout     = errors.New("the origin did not answer in time")
	ErrBadGateway  = errors.New("the origin could not be reached or answered badly")
	ErrTooLarge    = errors.New("the request body is too large")
	ErrRequestBody = errors.New("the request body could not be read")
)

// originConn is one connection to the origin with its read buffer.
type originConn struct {
	net.Conn
	br     *bufio.Reader
	reused bool
	since  time.Time // idle since
}

func (u *Client) dial() (*originConn, error) {
	d := net.Dialer{Timeout: u.connect}
	var c net.Conn
	var err error
	if u.tls {
		c, err = tls.DialWithDialer(&d, "tcp", u.addr, &tls.Config{ServerName: u.host})
	} else {
		c, err = d.Dial("tcp", u.addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDial, classify(err))
	}
	return &originConn{Conn: c, br: bufio.NewReaderSize(c, readBufferSize)}, nil
}

// ErrDial marks a failure to connect to the origin: wrapped, with
// ErrTimeout or ErrBadGateway, in a forward's error.
var ErrDial = errors.New("connecting to the origin")

// Probe connects to the origin within ctx and the connect timeout, then
// closes the connection.
func (u *Client) Probe(ctx context.Context) error {
	d := net.Dialer{Timeout: u.connect}
	c, err := d.DialContext(ctx, "tcp", u.addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// pool holds idle connections, newest last.
type pool struct {
	mu    sync.Mutex
	conns []*originConn
	done  bool
}

// get returns an idle connection the origin has not closed, or nil.
func (u *Client) get() *originConn {
	p := &u.idle
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) > 0 {
		c := p.conns[len(p.conns)-1]
		p.conns = p.conns[:len(p.conns)-1]
		if time.Since(c.since) < maxIdleTime && c.br.Buffered() == 0 && alive(c.Conn) {
			c.reused = true
			return c
		}
		c.Close()
	}
	return nil
}

func (u *Client) put(c *originConn) {
	p := &u.idle
	_ = c.SetDeadline(time.Time{})
	c.since = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		c.Close()
		return
	}
	if len(p.conns) >= maxIdleConns || (len(p.conns) > 0 && time.Since(p.conns[0].since) >= maxIdleTime) {
		p.conns[0].Close()
		p.conns = p.conns[1:]
	}
	p.conns = append(p.conns, c)
}

func (p *pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// alive reports whether an idle connection is still open: a peek that
// does not wait finds neither the origin's close nor stray bytes.
func alive(c net.Conn) bool {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = true
	_ = rc.Read(func(fd uintptr) bool {
		ok = peekIdle(fd)
		return true
	})
	return ok
}

// Forward sends ctx's request, prepared by Prepare, to the origin
// and puts its answer in ctx's response, the body as a stream read from
// the origin as the visitor takes it. 1xx interim answers are skipped;
// Set-Cookie headers for the cookies own names are dropped. An error is
// one of the kinds above (wrapping the cause); ctx's response is then not
// set.
func (u *Client) Forward(ctx *fasthttp.RequestCtx, own func(name []byte) bool) error {
	req := &ctx.Request
	body, length := requestBody(req)
	if length > u.bodyLimit {
		return ErrTooLarge
	}
	for attempt := 0; ; attempt++ {
		c := u.get()
		if c == nil {
			var err error
			if c, err = u.dial(); err != nil {
				return err
			}
		}
		head, err := u.exchange(ctx, c, body, length)
		if err == nil {
			return u.answer(ctx, c, head, own)
		}
		c.Close()
		// An idle connection the origin closed meanwhile: once more on a
		// new one, when nothing of the body was sent.
		if c.reused && attempt == 0 && length == 0 && (errors.Is(err, errNothingRead) || isReset(err)) {
			continue
		}
		return classifyForward(err)
	}
}

// requestBody is the request's body and its length (-1: chunked).
func requestBody(req *fasthttp.Request) (io.Reader, int64) {
	if req.IsBodyStream() {
		n := req.Header.ContentLength()
		switch {
		case n == -1:
			return req.BodyStream(), -1
		case n > 0:
			return req.BodyStream(), int64(n)
		}
		return nil, 0
	}
	b := req.Body()
	return bytes.NewReader(b), int64(len(b))
}

// bodyReadKey marks a request whose body was read whole (BodyConsumed).
type bodyReadKey struct{}

// BodyConsumed reports whether the gateway read ctx's request body to its
// end. A connection whose request body was left unread must be closed:
// the rest of it would be read as the next request.
func BodyConsumed(ctx *fasthttp.RequestCtx) bool { return ctx.UserValue(bodyReadKey{}) != nil }

// clientErr marks a failure reading the client's body (not the origin's).
type clientErr struct{ error }

func (e clientErr) Unwrap() error { return e.error }

// exchange writes the request on c and reads the answer's head, skipping
// 1xx interim answers (a 101 is refused: no switch was asked for).
func (u *Client) exchange(ctx *fasthttp.RequestCtx, c *originConn, body io.Reader, length int64) (*originHead, error) {
	w := &deadlineWriter{c: c, d: u.timeout}
	bw := bufio.NewWriterSize(w, 4<<10)
	writeHead(bw, &ctx.Request, length, false)
	if err := u.writeBody(bw, body, length); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if length != 0 {
		ctx.SetUserValue(bodyReadKey{}, true)
	}
	_ = c.SetReadDeadline(time.Now().Add(u.timeout))
	return finalHead(c.br, false)
}

// finalHead reads the origin's answer heads up to the final one, skipping
// 1xx interim answers (100, 103 Early Hints). A 101 is final when the
// request asked for a switch (upgrade), and malformed when it did not.
func finalHead(br *bufio.Reader, upgrade bool) (*originHead, error) {
	for {
		head, err := readHead(br, responseHeaderLimit)
		switch {
		case err != nil:
			return nil, err
		case head.status == fasthttp.StatusSwitchingProtocols && !upgrade:
			return nil, malformed("101 Switching Protocols to a request that asked for no switch")
		case head.status >= 200 || head.status == fasthttp.StatusSwitchingProtocols:
			return head, nil
		}
	}
}

// writeHead writes the request line and headers, framed by length;
// upgrade: asking for a protocol switch.
func writeHead(bw *bufio.Writer, req *fasthttp.Request, length int64, upgrade bool) {
	h := &req.Header
	bw.Write(h.Method())
	bw.WriteByte(' ')
	bw.Write(req.URI().RequestURI())
	bw.WriteString(" HTTP/1.1\r\n")
	h.VisitAll(func(k, v []byte) {
		if bytes.EqualFold(k, []byte("Content-Length")) || bytes.EqualFold(k, []byte("Transfer-Encoding")) ||
			bytes.EqualFold(k, []byte("Connection")) {
			return
		}
		bw.Write(k)
		bw.WriteString(": ")
		bw.Write(v)
		bw.WriteString("\r\n")
	})
	if upgrade {
		bw.WriteString("Connection: Upgrade\r\n")
	}
	switch {
	case length < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case length > 0 || !(h.IsGet() || h.IsHead()):
		bw.WriteString("Content-Length: " + strconv.FormatInt(length, 10) + "\r\n")
	}
	bw.WriteString("\r\n")
}

// writeBody copies the request's body, read as the client sends it: a
// chunked one is cut at the body limit (ErrTooLarge).
func (u *Client) writeBody(bw *bufio.Writer, body io.Reader, length int64) error {
	switch {
	case length == 0:
		return nil
	case length > 0:
		_, err := io.CopyN(bw, readerOf{body}, length)
		return err
	}
	cw := &chunkWriter{w: bw}
	n, err := io.Copy(cw, readerOf{io.LimitReader(body, u.bodyLimit+1)})
	switch {
	case err != nil:
		return err
	case n > u.bodyLimit:
		return ErrTooLarge
	}
	_, err = bw.WriteString("0\r\n\r\n")
	return err
}

// readerOf marks the client's read errors, and hides any WriterTo.
type readerOf struct{ r io.Reader }

func (r readerOf) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = clientErr{err}
	}
	return n, err
}

type chunkWriter struct{ w *bufio.Writer }

func (c *chunkWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.w.WriteString(strconv.FormatInt(int64(len(p)), 16) + "\r\n")
	c.w.Write(p)
	_, err := c.w.WriteString("\r\n")
	return len(p), err
}

// deadlineWriter gives each write to the origin d to go through.
type deadlineWriter struct {
	c net.Conn
	d time.Duration
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.c.SetWriteDeadline(time.Now().Add(w.d))
	return w.c.Write(p)
}

// answer puts the origin's answer in ctx's response, its body streaming
// from c (which it owns from now on).
func (u *Client) answer(ctx *fasthttp.RequestCtx, c *originConn, head *originHead, own func([]byte) bool) error {
	resp := &ctx.Response
	resp.Reset()
	copyHead(resp, head, own)
	if loc := resp.Header.Peek("Location"); len(loc) > 0 {
		resp.Header.SetBytesV("Location", u.localLocation(loc, ctx.Host()))
	}
	b := &originBody{u: u, c: c, kind: head.body(ctx.IsHead()), left: head.length, idle: u.timeout, reuse: !head.close}
	switch b.kind {
	case bodyNone:
		if ctx.IsHead() && head.length >= 0 {
			resp.Header.SetContentLength(int(head.length))
		}
		b.err = io.EOF
		b.Close()
	case bodyLength:
		if head.length <= smallBody {
			// A small answer is read whole first: one cut short is a 502
			// (and a once pass kept), not a truncated 200.
			body := make([]byte, head.length)
			if _, err := io.ReadFull(b, body); err != nil {
				b.Close()
				resp.Reset()
				return classify(err)
			}
			b.err = io.EOF
			b.Close()
			resp.SetBody(body)
			return nil
		}
		resp.SetBodyStream(b, int(head.length))
	default:
		b.left = 0
		resp.SetBodyStream(b, -1)
	}
	return nil
}

// copyHead copies the origin's status and end-to-end headers; Set-Cookie
// headers naming one of the waiting room's cookies are dropped (an origin
// must not set or clear a visitor's place or pass).
func copyHead(resp *fasthttp.Response, head *originHead, own func([]byte) bool) {
	h := &resp.Header
	h.DisableNormalizing()
	h.SetNoDefaultContentType(true)
	h.SetStatusCode(head.status)
	if len(head.reason) > 0 {
		h.SetStatusMessage(head.reason)
	}
	hop := map[string]bool{}
	for _, n := range hopHeaders {
		hop[strings.ToLower(n)] = true
	}
	for _, f := range head.fields {
		if bytes.EqualFold(f.name, []byte("Connection")) {
			for _, t := range connectionTokens(f.value) {
				hop[strings.ToLower(t)] = true
			}
		}
	}
	for _, f := range head.fields {
		name := strings.ToLower(string(f.name))
		switch {
		case hop[name], name == "content-length", name == "set-cookie" && own(cookieName(f.value)):
			continue
		}
		h.AddBytesKV(f.name, f.value)
	}
}

// localLocation is an origin's Location made to send the visitor back
// through the gateway: an absolute URL naming the origin itself — its
// address in Config.URL, or the visitor's host name at the origin's
// port, as an origin that builds redirects from Host and its own port
// (nginx's default) does — becomes the same path on the gateway (a
// path-absolute reference, resolved against the host the visitor used).
// Any other Location is kept as it is.
func (u *Client) localLocation(loc, reqHost []byte) []byte {
	l, err := url.Parse(string(loc))
	if err != nil || l.Host == "" || (l.Scheme != "" && l.Scheme != "http" && l.Scheme != "https") || l.User != nil {
		return loc
	}
	scheme := l.Scheme
	if scheme == "" { // //host/path: the scheme the origin was asked in
		scheme = map[bool]string{false: "http", true: "https"}[u.tls]
	}
	port := l.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	originHost, originPort, _ := net.SplitHostPort(u.addr)
	visitorHost := string(reqHost)
	if h, _, err := net.SplitHostPort(visitorHost); err == nil {
		visitorHost = h
	}
	host := strings.Trim(l.Hostname(), "[]")
	if port != originPort || !(strings.EqualFold(host, originHost) || strings.EqualFold(host, visitorHost)) {
		return loc
	}
	out := l.EscapedPath()
	if out == "" {
		out = "/"
	}
	if strings.HasPrefix(out, "//") { // a path-absolute reference may not start with //
		out = "/" + strings.TrimLeft(out, "/")
	}
	if l.RawQuery != "" || l.ForceQuery {
		out += "?" + l.RawQuery
	}
	if l.Fragment != "" {
		out += "#" + l.EscapedFragment()
	}
	return []byte(out)
}

// cookieName is the name a Set-Cookie value sets.
func cookieName(v []byte) []byte {
	name, _, _ := bytes.Cut(v, []byte{'='})
	return bytes.TrimSpace(name)
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// classify turns a connect failure into a failure kind.
func classify(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrBadGateway, err)
}

func classifyForward(err error) error {
	var ce clientErr
	switch {
	case errors.Is(err, ErrTooLarge):
		return err
	case errors.As(err, &ce):
		return fmt.Errorf("%w: %w", ErrRequestBody, ce.error)
	}
	return classify(err)
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1), never forwarded.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "TE", "Trailer", "Transfer-Encoding", "Upgrade"}

// rerouteHeaders let a client ask an origin's framework for another
// method or path than the one the gateway matched its routes on; never
// forwarded. Expect is the gateway's own to answer.
var rerouteHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
	"X-Original-URL", "X-Rewrite-URL", "Expect"}

// Reroutes reports whether a header name, read with "_" as "-", is one of
// the rerouting headers (Expect aside): they ask an origin's framework for
// another method or path than the request line's. Prepare removes them.
func Reroutes(name []byte) bool {
	name = bytes.ReplaceAll(name, []byte{'_'}, []byte{'-'})
	for _, n := range rerouteHeaders {
		if n != "Expect" && bytes.EqualFold(name, []byte(n)) {
			return true
		}
	}
	return false
}

// setHeaders are the headers the gateway sets or reads itself (and the
// pass header, Config.PassHeader): a client's own are replaced, and so is
// any spelled with "_" for "-" (CGI, WSGI and PHP read both as one
// variable).
var setHeaders = []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host",
	"Forwarded", "X-Request-Id", "X-Entry-Token", "X-Real-IP"}

// Forwarded says who asked, as the gateway saw it.
type Forwarded struct {
	Client net.IP // the client's address (a trusted proxy's client, when one is in front)
	// Chain is X-Forwarded-For as a trusted proxy sent it ("" from anyone
	// else: a client's own claim is dropped).
	Chain string
	Peer  net.IP // the socket's peer
	Proto string // "http" or "https"
	Host  string // the Host the client asked for
}

// Prepare makes ctx's request fit for the origin: hop-by-hop and
// rerouting headers, the gateway's own cookies (ownCookie) and pass
// header, and any header spelled like one of those with "_" removed; the
// forwarding headers set (X-Forwarded-For, -Proto, -Host and Forwarded).
// The Host header is kept: the origin sees the name its visitors use.
func (u *Client) Prepare(req *fasthttp.Request, f Forwarded, ownCookie func(name []byte) bool) {
	h := &req.Header
	for _, name := range connectionTokens(h.Peek("Connection")) {
		h.Del(name)
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
	for _, name := range rerouteHeaders {
		h.Del(name)
	}
	if u.passHeader != "" {
		h.Del(u.passHeader)
	}
	dropUnderscored(h, u.setHeaders)
	dropCookies(h, ownCookie)
	xff := f.Peer.String()
	if f.Chain != "" {
		xff = f.Chain + ", " + xff
	}
	h.Set("X-Forwarded-For", xff)
	h.Set("X-Forwarded-Proto", f.Proto)
	h.Set("X-Forwarded-Host", f.Host)
	h.Set("Forwarded", forwardedValue(f))
}

// dropUnderscored removes the headers whose name, read with "_" as "-",
// is one the gateway removes or sets.
func dropUnderscored(h *fasthttp.RequestHeader, setHeaders []string) {
	var names []string
	h.VisitAll(func(k, _ []byte) {
		if bytes.IndexByte(k, '_') < 0 {
			return
		}
		dashed := strings.ReplaceAll(string(k), "_", "-")
		for _, list := range [][]string{hopHeaders, rerouteHeaders, setHeaders} {
			for _, n := range list {
				if strings.EqualFold(dashed, n) {
					names = append(names, string(k))
				}
			}
		}
	})
	for _, n := range names {
		h.Del(n)
	}
}

// forwardedValue is RFC 7239's Forwarded for the client; a value that is
// not a token (an IPv6 address, a host with a port) is quoted.
func forwardedValue(f Forwarded) string {
	node := f.Client.String()
	if f.Client.To4() == nil {
		node = "[" + node + "]"
	}
	return "for=" + quoteIfNeeded(node) + ";proto=" + quoteIfNeeded(f.Proto) + ";host=" + quoteIfNeeded(f.Host)
}

func quoteIfNeeded(v string) string {
	token := v != ""
	for i := 0; i < len(v); i++ {
		token = token && IsTokenChar(v[i])
	}
	if token {
		return v
	}
	return `"` + quoter.Replace(v) + `"`
}

// quoter escapes a quoted-string's value. It is built once: a Host with a
// port is quoted on every forwarded request, and building a Replacer
// cost more than the rest of the Forwarded header.
var quoter = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// connectionTokens are the header names a Connection header lists.
func connectionTokens(v []byte) []string {
	var out []string
	for _, t := range bytes.Split(v, []byte{','}) {
		if t = bytes.TrimSpace(t); len(t) > 0 && !bytes.EqualFold(t, []byte("close")) && !bytes.EqualFold(t, []byte("keep-alive")) {
			out = append(out, string(t))
		}
	}
	return out
}

// dropCookies removes the cookies own says are the gateway's: the origin
// never sees a visitor's queue or pass tokens.
func dropCookies(h *fasthttp.RequestHeader, own func(name []byte) bool) {
	var names []string
	h.VisitAllCookie(func(k, _ []byte) {
		if own(k) {
			names = append(names, string(k))
		}
	})
	for _, n := range names {
		h.DelCookie(n)
	}
}

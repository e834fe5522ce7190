package fuzzroutes

// Regressions are cases a campaign found reaching a protected handler
// without a pass on the judge before it read every origin's reading
// (docs/fuzz-routes.md, "What the campaign found"), kept literally: the
// bounded test sends each through every pair. Each comment names the
// campaign's seed and case and the pairs it reached then (go run
// ./loadtest fuzz-routes --seed 1 --n 1000000); cases equal to a probe
// are left out.
var Regressions = []Case{
	// seed 1 case 630 (params ";/", then "%23"): gateway → fastify; nginx → fastify; caddy → fastify
	{Method: "POST", Target: "/api/orders;/%23", Note: "regression: params \";/\", then \"%23\""},
	// seed 1 case 891 (trailing "%20", trailing "\\.."): gateway → all; nginx → express,fastify,gomux,flask,django,php; caddy → all
	{Method: "GET", Target: "/checkout/%20\\..", Note: "regression: trailing \"%20\", trailing \"\\\\..\""},
	// seed 1 case 1680 (trailing "/..%2f"): nginx → express,fastify,gomux,flask,django,php; caddy → express,fastify,gomux,flask,django,php
	{Method: "GET", Target: "/checkout/..%2f", Note: "regression: trailing \"/..%2f\""},
	// seed 1 case 2862 (trailing "\\..", encode '.' ×2): gateway → sinatra; caddy → sinatra
	{Method: "GET", Target: "/checkout\\%252e.", Note: "regression: trailing \"\\\\..\", encode '.' ×2"},
	// seed 1 case 4037 (trailing "/../"): nginx → express,fastify,flask,django,php; caddy → express,fastify,flask,django,php
	{Method: "HEAD", Target: "/checkout/../", Note: "regression: trailing \"/../\""},
	// seed 1 case 4140 (encode 'o' ×1, trailing "/.."): nginx → fastify,flask,django,php; caddy → fastify,flask,django,php
	{Method: "GET", Target: "/check%6fut/..", Note: "regression: encode 'o' ×1, trailing \"/..\""},
	// seed 1 case 4654 (trailing "/..;/x", insert "\\"): gateway → all; nginx → express,fastify,gomux,flask,django,php; caddy → all
	{Method: "GET", Target: "/checkout/..;/\\x", Note: "regression: trailing \"/..;/x\", insert \"\\\\\""},
	// seed 1 case 5236 (trailing "/..", encode 'c' ×1): nginx → fastify,flask,django,php; caddy → fastify,flask,django,php
	{Method: "GET", Target: "/che%63kout/..", Note: "regression: trailing \"/..\", encode 'c' ×1"},
	// seed 1 case 5462 (trailing "/..", trailing "%20"): gateway → all; nginx → all; caddy → all
	{Method: "HEAD", Target: "/checkout/..%20", Note: "regression: trailing \"/..\", trailing \"%20\""},
	// seed 1 case 5502 (trailing "\\..", params "%3b"): gateway → sinatra; caddy → sinatra
	{Method: "HEAD", Target: "/checkout\\..%3b", Note: "regression: trailing \"\\\\..\", params \"%3b\""},
	// seed 1 case 5792 (trailing "/..;/x"): gateway → all; nginx → all; caddy → all
	{Method: "GET", Target: "/checkout/..;/x", Note: "regression: trailing \"/..;/x\""},
	// seed 1 case 6708 (dot segment "/.", trailing "%5c.."): gateway → express,fastify,gomux,flask,django,php; nginx → express,fastify,gomux,flask,django,php; caddy → express,fastify,gomux,flask,django,php
	{Method: "GET", Target: "/checkout/.%5c..", Note: "regression: dot segment \"/.\", trailing \"%5c..\""},
	// seed 1 case 8083 (trailing "/..", separator "/./"): nginx → express,fastify,flask,django,php; caddy → express,fastify,flask,django,php
	{Method: "GET", Target: "/checkout/./..", Note: "regression: trailing \"/..\", separator \"/./\""},
	// seed 1 case 8834 (upper case, trailing "/.", dot segment "/..;"): gateway → express; nginx → express; caddy → express
	{Method: "GET", Target: "/CHECKOUT/..;/.", Note: "regression: upper case, trailing \"/.\", dot segment \"/..;\""},
	// seed 1 case 9230 (trailing "/..;/x"): gateway → all; nginx → all; caddy → all
	{Method: "HEAD", Target: "/checkout/..;/x", Note: "regression: trailing \"/..;/x\""},
	// seed 1 case 9273 (trailing "/..;/x", upper case): gateway → express; nginx → express; caddy → express
	{Method: "GET", Target: "/CHECKOUT/..;/X", Note: "regression: trailing \"/..;/x\", upper case"},
	// seed 1 case 9516 (dot segment "/..;"): gateway → all; nginx → all; caddy → all
	{Method: "GET", Target: "/checkout/..;", Note: "regression: dot segment \"/..;\""},
	// seed 1 case 16659 (separator "/\\", dot segment "/..;"): gateway → all; nginx → express,fastify,gomux,flask,django,php; caddy → all
	{Method: "GET", Target: "/checkout/\\/..;", Note: "regression: separator \"/\\\\\", dot segment \"/..;\""},
	// seed 1 case 17225 (encode '/' ×1, trailing "\\.."): gateway → express,fastify,gomux,flask,django,php; nginx → gomux,flask,django,php; caddy → express,fastify,gomux,flask,django,php
	{Method: "GET", Target: "/checkout%2f\\..", Note: "regression: encode '/' ×1, trailing \"\\\\..\""},
	// seed 1 case 19155 (separator "/\\", suffix ".."): gateway → express,fastify,gomux,flask,django,php; nginx → express,fastify,gomux,flask,django,php; caddy → express,fastify,gomux,flask,django,php
	{Method: "GET", Target: "/checkout/\\..", Note: "regression: separator \"/\\\\\", suffix \"..\""},
	// seed 1 case 21790 (trailing "%5c..", trailing " "): gateway → sinatra
	{Method: "GET", Target: "/checkout%5c.. ", Note: "regression: trailing \"%5c..\", trailing \" \""},
	// seed 1 case 22964 (dot segment "/.. "): gateway → all; nginx → express,fastify,flask,django,php
	{Method: "HEAD", Target: "/checkout/.. ", Note: "regression: dot segment \"/.. \""},
	// seed 1 case 26757 (dot segment "/.."): nginx → express,fastify,django,php; caddy → express,fastify,django,php
	{Method: "GET", Target: "/checkout//..", Note: "regression: dot segment \"/..\""},
	// seed 1 case 31774 (dot segment "/.. ", trailing " "): gateway → all; nginx → express,fastify,flask,django,php
	{Method: "GET", Target: "/checkout/..  ", Note: "regression: dot segment \"/.. \", trailing \" \""},
	// seed 1 case 35022 (dot segment "/..;"): gateway → all; nginx → all; caddy → all
	{Method: "HEAD", Target: "/checkout/..;", Note: "regression: dot segment \"/..;\""},
	// seed 1 case 35671 (case of 'c', dot segment "/.."): nginx → express; caddy → express
	{Method: "GET", Target: "/cheCkout/..", Note: "regression: case of 'c', dot segment \"/..\""},
	// seed 1 case 36767 (dot segment "/.. "): gateway → all; nginx → express,fastify,flask,django,php
	{Method: "GET", Target: "/checkout/.. ", Note: "regression: dot segment \"/.. \""},
	// seed 1 case 36893 (dot segment "/..;", trailing "/."): gateway → express,fastify,flask,django,sinatra,php; nginx → express,fastify,flask,django,sinatra,php; caddy → express,fastify,flask,django,sinatra,php
	{Method: "GET", Target: "/checkout/..;/.", Note: "regression: dot segment \"/..;\", trailing \"/.\""},
}

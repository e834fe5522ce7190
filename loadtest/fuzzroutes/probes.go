package fuzzroutes

// Probes are the bounded corpus's literal cases, sent before any
// generated one: the bypasses the judge was shown to miss, each written
// out, and the regressions the campaign found (Regressions).
var Probes = append(append([]Case{
	// One more round of percent-decoding than the judge makes.
	{Method: "GET", Target: "/checkout/%252e%252e"},
	{Method: "GET", Target: "/checkout/%25252e%25252e"},
	// Raw and encoded dot segments after the protected prefix: the judge
	// resolves them to "/", an origin that does not routes the prefix.
	{Method: "GET", Target: "/checkout/.."},
	{Method: "GET", Target: "/checkout/../"},
	{Method: "GET", Target: "/checkout/pay/../.."},
	{Method: "HEAD", Target: "/checkout/.."},
	{Method: "GET", Target: "/checkout%2f.."},
	{Method: "GET", Target: "/checkout%2F.."},
	{Method: "GET", Target: "/checkout/%2e%2e"},
	{Method: "GET", Target: "/checkout/%2E%2E"},
	{Method: "GET", Target: "/checkout/.%2e"},
	{Method: "GET", Target: "/checkout\\.."},
	{Method: "GET", Target: "/checkout%5c.."},
	{Method: "POST", Target: "/api/orders/..", Header: []string{"Content-Type: application/json"}, Body: `{}`},
	{Method: "POST", Target: "/api/orders/%2e%2e", Header: []string{"Content-Type: application/json"}, Body: `{}`},
	// "#" in a target: a fragment to one reader, a path byte to another.
	{Method: "GET", Target: "/checkout#"},
	{Method: "GET", Target: "/checkout/pay#/../.."},
	{Method: "GET", Target: "/public#/../checkout/pay"},
	{Method: "GET", Target: "/checkout/%23/.."},
	// ";" ending the path (Fastify) past what the judge read as a segment's
	// ;params.
	{Method: "POST", Target: "/api/orders;/x", Header: []string{"Content-Type: application/json"}, Body: `{}`},
	{Method: "POST", Target: "/api/orders;x/y", Header: []string{"Content-Type: application/json"}, Body: `{}`},
	// Method overrides the judge does not read as a form.
	{Method: "POST", Target: "/checkout/pay", Body: "_method=GET", Note: "form _method without Content-Type"},
	{Method: "POST", Target: "/checkout", Body: "_method=GET", Note: "form _method without Content-Type"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: application/x-www-form-urlencoded, text/plain"}, Body: "_method=GET"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: text/plain, application/x-www-form-urlencoded"}, Body: "_method=GET"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: application/json"}, Body: `{"_method":"GET"}`},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: application/vnd.api+json"}, Body: `{"_method":"GET"}`},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: text/plain"}, Body: "_method=GET"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: application/octet-stream"}, Body: "_method=GET"},
	{Method: "POST", Target: "/checkout/pay?_method=GET"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: application/x-www-form-urlencoded"}, Body: "_method=GET"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"Content-Type: multipart/form-data; boundary=zz"},
		Body: "--zz\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nGET\r\n--zz--\r\n"},
	{Method: "POST", Target: "/checkout/pay", Header: []string{"X-HTTP-Method-Override: GET"}},
	{Method: "PUT", Target: "/checkout/pay", Header: []string{"X-HTTP-Method-Override: GET"}},
	{Method: "GET", Target: "/api/orders", Header: []string{"X-HTTP-Method-Override: POST"}},
	{Method: "PUT", Target: "/api/orders", Body: "_method=POST"},
	// The spellings the judge already reads (controls that must stay
	// refused or queued).
	{Method: "GET", Target: "/CHECKOUT/pay"},
	{Method: "GET", Target: "//checkout//pay"},
	{Method: "GET", Target: "/checkout;x=1/pay"},
	{Method: "GET", Target: "/checkout.json"},
	{Method: "GET", Target: "/%63heckout/pay"},
	{Method: "GET", Target: "/x/../checkout/pay"},
	{Method: "GET", Target: "/checkout/pay", Absolute: true},
	{Method: "GET", Target: "/che\u212aout/pay"},
	{Method: "GET", Target: "/checkout%c0%afpay"},
	{Method: "GET", Target: "/checkout\xef\xbc\x8fpay"},
	{Method: "POST", Target: "/API/Orders/", Body: "{}"},
	{Method: "POST", Target: "/api/orders%2e", Body: "{}"},
}, lateProbes...), Regressions...)

// lateProbes are more controls the judge already reads: look-alikes that
// fold to ASCII, trailing dots and spaces, a suffix behind ;params.
var lateProbes = []Case{
	{Method: "GET", Target: "/checkout\xef\xbc\x8e\xef\xbc\x8e"},
	{Method: "GET", Target: "/checkout/pay%20"},
	{Method: "GET", Target: "/checkout/pay."},
	{Method: "GET", Target: "/che%E2%84%AAout/pay"},
	{Method: "GET", Target: "/checkout/pay;.json"},
}

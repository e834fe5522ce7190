<?php
// A PHP origin for the fuzz-routes scenario (loadtest/fuzzroutes): a front
// controller for PHP's built-in server (php -S host:port router.php), routing
// as a typical micro-framework does: REQUEST_URI without its query,
// rawurldecode()d once, matched case-sensitively against the routes, no
// dot-segment resolution, a trailing slash significant. The method is
// overridden as Laravel (Symfony's Request) does for a POST: the
// X-HTTP-Method-Override header, else _method from the form body ($_POST)
// or a JSON body (a Content-Type holding /json or +json), else from the
// query. Each run of a protected route is one JSON line appended to
// $ORIGIN_LOG.

$uri = $_SERVER['REQUEST_URI'];
if (false !== $pos = strpos($uri, '?')) {
    $uri = substr($uri, 0, $pos);
}
$path = rawurldecode($uri);

$sent = $_SERVER['REQUEST_METHOD'];
$method = $sent;
if ($method === 'POST') {
    $override = $_SERVER['HTTP_X_HTTP_METHOD_OVERRIDE'] ?? null;
    if ($override === null) {
        $type = $_SERVER['CONTENT_TYPE'] ?? '';
        $input = $_POST;
        if (str_contains($type, '/json') || str_contains($type, '+json')) {
            $input = json_decode(file_get_contents('php://input'), true);
            $input = is_array($input) ? $input : [];
        }
        $override = $input['_method'] ?? $_GET['_method'] ?? null;
    }
    if (is_string($override) && $override !== '') {
        $method = strtoupper($override);
    }
}

function record(string $name, string $method, string $sent): void
{
    $rec = ['handler' => $name, 'method' => $method, 'sent' => $sent, 'target' => $_SERVER['REQUEST_URI'],
        'pass' => isset($_SERVER['HTTP_WAITINGROOM_PASS']), 'case' => $_SERVER['HTTP_FUZZ_CASE'] ?? ''];
    file_put_contents(getenv('ORIGIN_LOG'), json_encode($rec, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE) . "\n", FILE_APPEND | LOCK_EX);
    header('Content-Type: text/plain');
    echo 'protected';
}

$routes = [
    ['GET', '#^/__ready$#', null],
    ['GET', '#^/checkout$#', '/checkout'],
    ['GET', '#^/checkout/.+$#', '/checkout/{rest:.+}'],
    ['POST', '#^/api/orders$#', '/api/orders'],
];
foreach ($routes as [$m, $re, $name]) {
    $allowed = $m === $method || ($m === 'GET' && $method === 'HEAD');
    if ($allowed && preg_match($re, $path)) {
        if ($name === null) {
            header('Content-Type: text/plain');
            echo 'ready';
        } else {
            record($name, $method, $sent);
        }
        return true;
    }
}
header('Content-Type: text/plain');
echo 'open';
return true;

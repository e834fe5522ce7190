# A Sinatra origin for the fuzz-routes scenario (loadtest/fuzzroutes),
# served by WEBrick through Rack. Sinatra's defaults: case-sensitive
# routes, percent-escapes decoded once before matching, a trailing slash
# significant, GET routes answer HEAD, and rack-protection on (its
# PathTraversal resolves dot segments in PATH_INFO). method_override is on,
# as Sinatra apps conventionally have it: Rack::MethodOverride turns a
# POST into the method of its form's _method field (a body with no
# Content-Type is read as a form) or of X-HTTP-Method-Override. Each run of
# a protected route is one JSON line appended to $ORIGIN_LOG; it listens
# on $ORIGIN_ADDR (host:port) and prints "ready" once it does.
require 'json'
require 'sinatra/base'
require 'webrick'

class FuzzOrigin < Sinatra::Base
  set :method_override, true
  set :show_exceptions, false
  set :logging, false

  LOCK = Mutex.new

  helpers do
    def record(name)
      rec = { handler: name, method: request.request_method,
              sent: env['rack.methodoverride.original_method'] || request.request_method,
              target: env['REQUEST_URI'].to_s.dup.force_encoding('UTF-8').scrub('?'), pass: !env['HTTP_WAITINGROOM_PASS'].nil?,
              case: env['HTTP_FUZZ_CASE'].to_s }
      LOCK.synchronize { File.open(ENV.fetch('ORIGIN_LOG'), 'a') { |f| f.puts(rec.to_json) } }
      content_type 'text/plain'
      'protected'
    end
  end

  get('/__ready') { 'ready' }
  get('/checkout') { record('/checkout') }
  get('/checkout/*') { record('/checkout/*') }
  post('/api/orders') { record('/api/orders') }
  %w[get post put delete patch options].each do |verb|
    send(verb, '*') { content_type 'text/plain'; 'open' }
  end
end

host, _, port = ENV.fetch('ORIGIN_ADDR').rpartition(':')
$stdout.sync = true
Rack::Handler::WEBrick.run(FuzzOrigin, Host: host, Port: Integer(port),
                           AccessLog: [], Logger: WEBrick::Log.new($stderr, WEBrick::Log::WARN),
                           StartCallback: -> { puts 'ready' })
